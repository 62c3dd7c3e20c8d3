//! A fast, non-cryptographic hasher for the daemon's integer-keyed maps
//! (the keys come from the kernel and our own serials, not from an
//! adversary, so SipHash's DoS resistance buys nothing here).

use std::hash::{BuildHasherDefault, Hasher};

/// FxHash-style multiply-rotate hasher.
#[derive(Default, Clone, Copy)]
pub struct FxLike(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for FxLike {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(K);
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type FastHash = BuildHasherDefault<FxLike>;
