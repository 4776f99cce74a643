//! What one size of a family is: a number (`8192`, `268435456`) or
//! dimensions (`8191x8193`). Each family says which it takes.

use std::fmt;
use std::str::FromStr;

use crate::runtime::{Error, Result};

/// One or more dimensions, as `--sizes` takes them: `4096` or `8191x8193`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Shape(Vec<usize>);

impl Shape {
    /// A single number.
    pub fn n(n: usize) -> Shape {
        Shape(vec![n])
    }

    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// The first dimension: the number plots and the JSON's `size` use.
    pub fn lead(&self) -> usize {
        self.0[0]
    }

    /// The one number of a family that takes no dimensions.
    pub fn one(&self, family: &str) -> Result<usize> {
        match self.0[..] {
            [n] => Ok(n),
            _ => Err(Error::InvalidInput(format!("{family} sizes are one number, not {self}"))),
        }
    }

    /// `n` as `(n, n)`, or `AxB` as `(A, B)`.
    pub fn pair(&self, family: &str) -> Result<(usize, usize)> {
        match self.0[..] {
            [n] => Ok((n, n)),
            [a, b] => Ok((a, b)),
            _ => Err(Error::InvalidInput(format!("{family} sizes are N or AxB, not {self}"))),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.0.iter().map(usize::to_string).collect();
        f.write_str(&dims.join("x"))
    }
}

impl FromStr for Shape {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Shape, String> {
        let dims = text
            .split('x')
            .map(|d| d.trim().parse::<usize>())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| format!("'{text}' is not a size: a number or dimensions such as 8191x8193"))?;
        if dims.contains(&0) {
            return Err(format!("sizes must be positive (got {text})"));
        }
        Ok(Shape(dims))
    }
}
