//! The KV cache as the decode kernels read it, built on the host.
//!
//! Contiguous: K (and V) `[b, kv_heads, capacity, d]`, the forward's
//! layout, one page per sequence (`table[b] = b`). Paged: a pool of pages
//! `[pages, P, kv_heads, d]` (vLLM's and FlashAttention's layout), a table
//! of `table_stride` page numbers per sequence. The pool's pages are dealt
//! to the sequences in a shuffled order, as a server's allocator leaves
//! them, so that no kernel can count on a sequence's pages being adjacent.
//! Each sequence gets room for `spare` more tokens, where
//! [`Cache::append`] writes them: one row of K and V per token, nothing
//! else moved.

use rand::SeedableRng;
use rand::seq::SliceRandom;

use super::Decode;
use crate::runtime::{Error, Result};

/// A cache's geometry and contents.
#[derive(Clone, Debug)]
pub struct Cache<T> {
    pub k: Vec<T>,
    pub v: Vec<T>,
    /// Page numbers, `table_stride` per sequence (`u32::MAX` where no page
    /// is dealt).
    pub table: Vec<u32>,
    pub table_stride: usize,
    /// Tokens a page: `P` when paged, the capacity when contiguous.
    pub page_rows: usize,
    pub paged: bool,
    kv_heads: usize,
    d: usize,
}

impl<T: Copy + Default> Cache<T> {
    /// The cache of `p` (its page size, or contiguous) holding sequence
    /// `b`'s keys and values from `k[b]` and `v[b]`, each `[kv_heads,
    /// lens[b], d]`, with room for `spare` more tokens a sequence; pages
    /// dealt in an order drawn from `seed`.
    pub fn build(p: &Decode, (k, v): (&[Vec<T>], &[Vec<T>]), spare: usize, seed: u64) -> Self {
        let (kv_heads, d) = (p.kv_heads, p.d);
        let room = p.max_len() + spare;
        let mut cache = match p.page_size {
            None => Cache {
                k: vec![T::default(); p.batch * kv_heads * room * d],
                v: vec![T::default(); p.batch * kv_heads * room * d],
                table: (0..p.batch as u32).collect(),
                table_stride: 1,
                page_rows: room,
                paged: false,
                kv_heads,
                d,
            },
            Some(size) => {
                let per_seq = room.div_ceil(size);
                let needed: Vec<usize> = p.lens.iter().map(|&l| (l + spare).div_ceil(size)).collect();
                let pages: usize = needed.iter().sum();
                let mut order: Vec<u32> = (0..pages as u32).collect();
                order.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(seed));
                let mut table = vec![u32::MAX; p.batch * per_seq];
                let mut dealt = order.into_iter();
                for (b, &n) in needed.iter().enumerate() {
                    for slot in &mut table[b * per_seq..b * per_seq + n] {
                        *slot = dealt.next().expect("pages for every sequence");
                    }
                }
                Cache {
                    k: vec![T::default(); pages * size * kv_heads * d],
                    v: vec![T::default(); pages * size * kv_heads * d],
                    table,
                    table_stride: per_seq,
                    page_rows: size,
                    paged: true,
                    kv_heads,
                    d,
                }
            }
        };
        for b in 0..p.batch {
            for h in 0..kv_heads {
                for j in 0..p.lens[b] {
                    let from = (h * p.lens[b] + j) * d;
                    let to = cache.row(b, h, j);
                    cache.k[to..to + d].copy_from_slice(&k[b][from..from + d]);
                    cache.v[to..to + d].copy_from_slice(&v[b][from..from + d]);
                }
            }
        }
        cache
    }

    /// Checks that the cache holds every key of `p`: room for each
    /// sequence's length, and each page its table names for them inside the
    /// pool (the kernels read what the table says, unchecked).
    pub fn check(&self, p: &Decode) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidInput(format!("decode {p}: {m}")));
        let (rows, per_page) = (self.page_rows, self.page_rows * self.kv_heads * self.d);
        if self.k.len() != self.v.len() || self.table.len() < p.batch * self.table_stride {
            return bad("K, V and the table do not match".into());
        }
        if self.paged && !rows.is_power_of_two() {
            return bad(format!("a page of {rows} tokens (a power of two)"));
        }
        let pages = self.k.len() / per_page.max(1);
        for (b, &len) in p.lens.iter().enumerate() {
            if len > self.table_stride * rows {
                return bad(format!(
                    "sequence {b} has {len} keys, its table room for {}",
                    self.table_stride * rows
                ));
            }
            let used = &self.table[b * self.table_stride..b * self.table_stride + len.div_ceil(rows)];
            if let Some(page) = used.iter().find(|&&page| page as usize >= pages) {
                return bad(format!("sequence {b}'s table names page {page}, past the pool's {pages}"));
            }
        }
        Ok(())
    }

    /// Element index of key `j` of sequence `b`, K/V head `h`.
    pub fn row(&self, b: usize, h: usize, j: usize) -> usize {
        let (kv, d, rows) = (self.kv_heads, self.d, self.page_rows);
        if self.paged {
            let page = self.table[b * self.table_stride + j / rows] as usize;
            ((page * rows + j % rows) * kv + h) * d
        } else {
            ((b * kv + h) * rows + j) * d
        }
    }

    /// Writes token `len` of sequence `b` (its K and V rows, `[kv_heads,
    /// d]` each) and returns the element indices written: `kv_heads d` of
    /// each of K and V, nothing else. The caller makes the sequence's length
    /// `len + 1`.
    pub fn append(&mut self, b: usize, len: usize, (k, v): (&[T], &[T])) -> Vec<usize> {
        let mut written = Vec::with_capacity(self.kv_heads * self.d);
        for h in 0..self.kv_heads {
            let to = self.row(b, h, len);
            let from = h * self.d;
            self.k[to..to + self.d].copy_from_slice(&k[from..from + self.d]);
            self.v[to..to + self.d].copy_from_slice(&v[from..from + self.d]);
            written.extend(to..to + self.d);
        }
        written
    }
}
