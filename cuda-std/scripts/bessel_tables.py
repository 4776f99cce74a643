#!/usr/bin/env python3
"""Coefficient tables of lab-cuda-std's Bessel functions j0, j1, y0, y1
(cuda-std/src/float/bessel_tables.rs), fitted here with mpmath.

For each f in (J0, J1, Y0, Y1):
  - [START, X0] is cut at the extrema of f (the zeros of f'), so that each
    piece holds at most one zero z of f; a piece with a zero is fitted as
    f(x) = t g(t), t = x - z (z a triple-double), a piece without one as
    f(x) = g(t), t = x - c (c its middle); g is the polynomial
    interpolating at Chebyshev nodes (degree <= MAX_DEG, its monomial
    coefficients solved at 200 bits and rounded to doubles), checked at 400
    points of the piece against mpmath to a relative error below 2^-62; a
    piece that cannot be fitted so is halved (the zero stays in one half).
  - from X0 on, the modulus and phase: J = M cos(theta), Y = M sin(theta),
    M = sqrt(2/(pi x)) (1 + w m(w)), theta = x - (2 nu + 1) pi/4 + (c0 + w
    a(w))/x with w = 1/x^2 and c0 = (4 nu^2 - 1)/8; m and a are fitted
    polynomials in w on [0, 1/X0^2] (exact at w = 0 to the asymptotic
    series' first terms), each on a few pieces of w.
  - the power series of Y0 and Y1 below their START, around their
    logarithm: Y0 = 2/pi ((ln(x/2) + gamma) J0 + S0(x^2)), Y1 = 2/pi
    (-1/x + (ln(x/2) + gamma) J1 - x T1(x^2)), S0 and T1 Taylor
    polynomials in x^2 (exact rationals rounded once).
Run: python3 cuda-std/scripts/bessel_tables.py > cuda-std/src/float/bessel_tables.rs
"""
import sys

import mpmath
from mpmath import mp, mpf

mp.prec = 200

X0 = 20
MAX_DEG = 22
W_SCALE = 512
TOL = mpf(2) ** -60
START = {"j0": 0, "j1": 0, "y0": mpf("0.625"), "y1": mpf(1)}


def f64(v):
    return float(mpf(v))


def bessel(name, x):
    nu = int(name[1])
    return mpmath.besselj(nu, x) if name[0] == "j" else mpmath.bessely(nu, x)


def dbessel(name, x):
    """f'(x): J0' = -J1, J1' = J0 - J1/x (Y alike)."""
    kind = mpmath.besselj if name[0] == "j" else mpmath.bessely
    if name[1] == "0":
        return -kind(1, x)
    if x == 0:
        return mpf(1) / 2
    return kind(0, x) - kind(1, x) / x


def zeros_in(name, lo, hi, deriv=False):
    """The zeros of f (or f') in (lo, hi), by bracketing and bisection."""
    g = (lambda x: dbessel(name, x)) if deriv else (lambda x: bessel(name, x))
    out = []
    n = 4000
    xs = [lo + (hi - lo) * mpf(i) / n for i in range(1, n)]
    prev = None
    for x in xs:
        v = g(x)
        if prev is not None and (prev[1] < 0) != (v < 0):
            out.append(mpmath.findroot(g, (prev[0], x), solver="anderson"))
        prev = (x, v)
    return out


def cheb_fit(gfun, a, b, deg):
    """Monomial coefficients (mp) of the interpolant of gfun at Chebyshev
    nodes of [a, b] (the variable t)."""
    nodes = [(a + b) / 2 + (b - a) / 2 * mpmath.cos(mpmath.pi * (2 * k + 1) / (2 * deg + 2)) for k in range(deg + 1)]
    vals = [gfun(t) for t in nodes]
    m = mpmath.matrix([[t**j for j in range(deg + 1)] for t in nodes])
    c = mpmath.lu_solve(m, mpmath.matrix(vals))
    return [c[j] for j in range(deg + 1)]


def poly(cs, t):
    r = mpf(0)
    for c in reversed(cs):
        r = r * t + c
    return r


def check(gfun, cs, a, b, n=400, absolute=False):
    """The maximum error relative to g (or to max |g|, `absolute`)."""
    worst, top = mpf(0), mpf(0)
    for i in range(n + 1):
        t = a + (b - a) * mpf(i) / n
        want = gfun(t)
        top = max(top, abs(want))
        if want != 0:
            worst = max(worst, abs(poly(cs, t) - want) / (1 if absolute else abs(want)))
    return worst / top if absolute else worst


def split3(z):
    h = f64(z)
    m = f64(z - h)
    l = f64(z - h - m)
    return h, m, l


def fit_piece(name, a, b, z):
    """[(a, b, zero or centre triple, is_zero, coefficients)]."""
    if z is not None:
        zt = split3(z)
        zz = mpf(zt[0]) + mpf(zt[1]) + mpf(zt[2])
        fz = dbessel(name, zz)

        def gfun(t):
            if abs(t) < mpf(2) ** -200:
                return fz
            return bessel(name, zz + t) / t

        lo, hi = a - zz, b - zz
    else:
        c = f64((a + b) / 2)
        zt = (c, 0.0, 0.0)

        def gfun(t):
            return bessel(name, c + t)

        lo, hi = a - c, b - c
    for deg in range(8, MAX_DEG + 1):
        cs = cheb_fit(gfun, lo, hi, deg)
        err = check(gfun, cs, lo, hi)
        if err < TOL:
            print(f"{name} [{float(a):.4f}, {float(b):.4f}] zero={z is not None} deg {deg} err {float(err):.3e}",
                  file=sys.stderr)
            return [(a, b, zt, z is not None, cs)]
    assert b - a > mpf("0.05"), "no fit"
    mid = (a + b) / 2
    if z is not None and abs(z - mid) < (b - a) / 8:
        # Keep the zero away from the cut.
        mid = z + (b - a) / 4 if z < mid else z - (b - a) / 4
    left_z = z if (z is not None and z < mid) else None
    right_z = z if (z is not None and z >= mid) else None
    return fit_piece(name, a, mid, left_z) + fit_piece(name, mid, b, right_z)


def pieces(name):
    start = mpf(START[name])
    ext = zeros_in(name, start + mpf("0.01"), X0, deriv=True)
    zs = zeros_in(name, start + mpf("0.01"), X0)
    if name == "j1":
        zs = [mpf(0)] + zs
    cuts = [start] + ext + [mpf(X0)]
    out = []
    for a, b in zip(cuts, cuts[1:]):
        inside = [z for z in zs if a <= z < b]
        assert len(inside) <= 1
        out += fit_piece(name, a, b, inside[0] if inside else None)
    return out


def mod_phase(nu, x):
    j, y = mpmath.besselj(nu, x), mpmath.bessely(nu, x)
    m = mpmath.sqrt(j * j + y * y)
    theta = mpmath.atan2(y, j)
    base = x - (2 * nu + 1) * mpmath.pi / 4
    k = mpmath.nint((base - theta) / (2 * mpmath.pi))
    alpha = theta + 2 * k * mpmath.pi - base
    return m, alpha


def large(nu):
    """Fits of m(w) and a(w) on pieces of [0, 1/X0^2]."""
    c0 = mpf(4 * nu * nu - 1) / 8
    mu = 4 * nu * nu

    def mfun(w):
        if w == 0:
            return (mu - 1) / mpf(16)
        x = 1 / mpmath.sqrt(w)
        m, _ = mod_phase(nu, x)
        return (m / mpmath.sqrt(2 / (mpmath.pi * x)) - 1) / w

    def afun(w):
        if w == 0:
            return (mu - 1) * (mu - 25) / mpf(384)
        x = 1 / mpmath.sqrt(w)
        _, a = mod_phase(nu, x)
        return (a * x - c0) / w

    out = []
    # In s = W_SCALE w (a power of two, so the scaling is exact).
    for fun in (mfun, afun):
        sfun = lambda s, fun=fun: fun(s / W_SCALE)
        for deg in range(4, 40):
            cs = cheb_fit(sfun, 0, W_SCALE / mpf(X0) ** 2, deg)
            err = check(sfun, cs, 0, W_SCALE / mpf(X0) ** 2, 100, absolute=True)
            if err < mpf(2) ** -56:
                break
        print(f"large nu={nu} deg {deg} err {float(err):.3e}", file=sys.stderr)
        out.append([f64(v) for v in cs])
    return out


def harmonic(k):
    return sum(mpf(1) / j for j in range(1, k + 1))


def series():
    """S0 and T1's coefficients in x^2, checked against mpmath's Y0, Y1."""
    s0 = [(-1) ** (k + 1) * harmonic(k) / (mpf(4) ** k * mpmath.factorial(k) ** 2) for k in range(1, 12)]
    s0 = [mpf(0)] + s0
    t1 = [(-1) ** k * (harmonic(k) + harmonic(k + 1)) / (4 * mpf(4) ** k * mpmath.factorial(k) * mpmath.factorial(k + 1))
          for k in range(12)]
    g = mpmath.euler - mpmath.log(2)
    for x in (mpf("0.1"), mpf("0.625"), mpf(1)):
        lg = mpmath.log(x) + g
        y0 = 2 / mpmath.pi * (lg * mpmath.besselj(0, x) + poly(s0, x * x))
        y1 = 2 / mpmath.pi * (-1 / x + lg * mpmath.besselj(1, x) - x * poly(t1, x * x))
        assert abs(y0 / mpmath.bessely(0, x) - 1) < mpf(10) ** -20, x
        assert abs(y1 / mpmath.bessely(1, x) - 1) < mpf(10) ** -20, x
    return s0[1:], t1


def lit(v):
    d = f64(v)
    return repr(d) if d != 0 else "0.0"


def dd(v):
    h = f64(v)
    return f"({lit(h)}, {lit(v - mpf(h))})"


def emit_list(cs, indent="        "):
    out = []
    for i in range(0, len(cs), 3):
        out.append(indent + " ".join(lit(c) + "," for c in cs[i:i + 3]))
    return "\n".join(out)


def main():
    s0, t1 = series()
    o = []
    o.append("//! Generated by `cuda-std/scripts/bessel_tables.py` (mpmath, 200 bits);")
    o.append("//! do not edit. The fits of [`bessel`](super::bessel): see the script.")
    o.append("")
    o.append("/// One piece of a fit on `[START, X0]`: up to `end`.")
    o.append("pub struct Piece {")
    o.append("    /// Where the piece ends (the next begins).")
    o.append("    pub end: f64,")
    o.append("    /// The zero (a triple-double) or the centre (`[c, 0, 0]`) that `t` is measured from.")
    o.append("    pub z: [f64; 3],")
    o.append("    /// Whether `z` is a zero: the value is `t g(t)`, else `g(t)`.")
    o.append("    pub zero: bool,")
    o.append("    /// `g`'s coefficients, constant first.")
    o.append("    pub c: &'static [f64],")
    o.append("}")
    o.append("")
    o.append(f"/// Where the modulus and phase take over.\npub const X0: f64 = {X0}.0;")
    o.append(f"/// The modulus and phase fits' variable is `W_SCALE / x^2`.\npub const W_SCALE: f64 = {W_SCALE}.0;")
    for name in ("j0", "j1", "y0", "y1"):
        ps = pieces(name)
        o.append(f"/// Where the pieces of `{name}` begin.\npub const {name.upper()}_START: f64 = {lit(START[name])};")
        o.append(f"/// The pieces of `{name}` on `[{name.upper()}_START, X0]`.")
        o.append(f"pub const {name.upper()}_PIECES: [Piece; {len(ps)}] = [")
        for a, b, zt, is_zero, cs in ps:
            o.append("    Piece {")
            o.append(f"        end: {lit(b)},")
            o.append(f"        z: [{lit(zt[0])}, {lit(zt[1])}, {lit(zt[2])}],")
            o.append(f"        zero: {'true' if is_zero else 'false'},")
            o.append("        c: &[")
            o.append(emit_list(cs, "            "))
            o.append("        ],")
            o.append("    },")
        o.append("];")
    for nu in (0, 1):
        m, a = large(nu)
        o.append(f"/// The modulus of order {nu}: `M = sqrt(2/(pi x)) (1 + w m(s))`, `s = W_SCALE w`.")
        o.append(f"pub const MOD{nu}: [f64; {len(m)}] = [")
        o.append(emit_list(m, "    "))
        o.append("];")
        o.append(f"/// The phase of order {nu}: `x theta - x^2 + ... = c0 + w a(s)`, `s = W_SCALE w`.")
        o.append(f"pub const PHASE{nu}: [f64; {len(a)}] = [")
        o.append(emit_list(a, "    "))
        o.append("];")
    o.append("/// `S0`'s coefficients of `x^2, x^4, ...`: `Y0 = 2/pi ((ln(x/2) + gamma) J0 + S0)`.")
    o.append(f"pub const Y0_SERIES: [f64; {len(s0)}] = [")
    o.append(emit_list(s0, "    "))
    o.append("];")
    o.append("/// `T1`'s coefficients of `1, x^2, ...`: `Y1 = 2/pi (-1/x + (ln(x/2) + gamma) J1 - x T1)`.")
    o.append(f"pub const Y1_SERIES: [f64; {len(t1)}] = [")
    o.append(emit_list(t1, "    "))
    o.append("];")
    o.append(f"/// Euler's gamma minus ln 2, a double-double.\npub const GAMMA_MINUS_LN2: (f64, f64) = {dd(mpmath.euler - mpmath.log(2))};")
    o.append(f"/// `sqrt(2/pi)`, a double-double.\npub const SQRT_2_OVER_PI: (f64, f64) = {dd(mpmath.sqrt(2 / mpmath.pi))};")
    two_pi_lo = lit(2 / mpmath.pi - mpf(f64(2 / mpmath.pi)))
    o.append("/// `2/pi`, a double-double (clippy asks for core's name of the high part).")
    o.append(f"pub const TWO_OVER_PI: (f64, f64) = (core::f64::consts::FRAC_2_PI, {two_pi_lo});")
    print("\n".join(o))


if __name__ == "__main__":
    main()
