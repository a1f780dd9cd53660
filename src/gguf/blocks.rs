//! Random tensor data written directly in ggml's block formats, so a synthetic 7B model at
//! Q8_0 or Q4_0 needs no 14 GB F16 intermediate. Any bit pattern of quants is a valid block;
//! only the f16 scales must be finite, and they are set so weights are about as large as
//! `scale` (≈ 1/√fan_in, like a trained model's init), which keeps activations finite.

use std::io::{self, Write};

use crate::util::rng::SplitMix64;

/// IEEE half precision bits of `x` (round to nearest even; subnormals kept, overflow to ∞).
pub fn f16_bits(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// The types written directly: F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q6_K, BF16.
pub(crate) const DIRECT_TYPES: &[u32] = &[0, 1, 2, 3, 6, 7, 8, 14, 30];

/// Elements per block and bytes per block of a directly written type.
fn layout(ggml_type: u32) -> Option<(u64, usize)> {
    let (_, block, bytes) = super::type_layout(ggml_type)?;
    (DIRECT_TYPES.contains(&ggml_type)).then_some((block, bytes as usize))
}

fn fill(rng: &mut SplitMix64, out: &mut [u8]) {
    for chunk in out.chunks_mut(8) {
        let r = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
}

fn put_f16(out: &mut [u8], at: usize, x: f32) {
    out[at..at + 2].copy_from_slice(&f16_bits(x).to_le_bytes());
}

/// Writes `n` random elements of `ggml_type` (a multiple of its block size), seeded.
pub fn write_random(
    w: &mut impl Write,
    ggml_type: u32,
    n: u64,
    seed: u64,
    scale: f32,
) -> io::Result<()> {
    let (block, bytes) = layout(ggml_type).ok_or_else(|| {
        io::Error::other(format!(
            "ggml type {ggml_type} cannot be generated directly"
        ))
    })?;
    if n % block != 0 {
        return Err(io::Error::other(format!(
            "{n} elements are not a whole number of blocks of {block}"
        )));
    }
    let mut rng = SplitMix64(seed);
    let per_buf = (1usize << 16) / bytes;
    let mut buf = vec![0u8; per_buf * bytes];
    let mut left = n / block;
    while left > 0 {
        let k = per_buf.min(left as usize);
        let out = &mut buf[..k * bytes];
        fill_blocks(&mut rng, ggml_type, out, bytes, scale);
        w.write_all(out)?;
        left -= k as u64;
    }
    Ok(())
}

fn uniform(rng: &mut SplitMix64, scale: f32) -> f32 {
    (rng.next_f32() * 2.0 - 1.0) * scale
}

fn fill_blocks(rng: &mut SplitMix64, ty: u32, out: &mut [u8], bytes: usize, scale: f32) {
    match ty {
        0 => out
            .chunks_mut(4)
            .for_each(|c| c.copy_from_slice(&uniform(rng, scale).to_le_bytes())),
        1 => out
            .chunks_mut(2)
            .for_each(|c| c.copy_from_slice(&f16_bits(uniform(rng, scale)).to_le_bytes())),
        30 => out.chunks_mut(2).for_each(|c| {
            let b = (uniform(rng, scale).to_bits() >> 16) as u16;
            c.copy_from_slice(&b.to_le_bytes())
        }),
        _ => {
            fill(rng, out);
            for b in out.chunks_mut(bytes) {
                scale_block(ty, b, scale);
            }
        }
    }
}

/// Sets the scales of one block of random quants so that values span about ±scale.
fn scale_block(ty: u32, b: &mut [u8], scale: f32) {
    match ty {
        // Q4_0: (q − 8)·d, q in 0..16
        2 => put_f16(b, 0, scale / 8.0),
        // Q4_1: q·d + m
        3 => {
            put_f16(b, 0, 2.0 * scale / 15.0);
            put_f16(b, 2, -scale);
        }
        // Q5_0: (q − 16)·d, q in 0..32
        6 => put_f16(b, 0, scale / 16.0),
        // Q5_1: q·d + m
        7 => {
            put_f16(b, 0, 2.0 * scale / 31.0);
            put_f16(b, 2, -scale);
        }
        // Q8_0: q·d, q in −128..128
        8 => put_f16(b, 0, scale / 127.0),
        // Q6_K: d·sc·(q − 32); ql[128] qh[64] scales[16] (i8) d
        14 => {
            for s in &mut b[192..208] {
                *s = (*s & 0x3F) | 1; // 1..63, positive
            }
            put_f16(b, 208, scale / (32.0 * 32.0));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_matches_known_values() {
        assert_eq!(f16_bits(1.0), 0x3C00);
        assert_eq!(f16_bits(-2.0), 0xC000);
        assert_eq!(f16_bits(0.0), 0);
        assert_eq!(f16_bits(65504.0), 0x7BFF);
        assert_eq!(f16_bits(1e6), 0x7C00);
        assert_eq!(f16_bits(5.960_464_5e-8), 0x0001); // smallest subnormal
        assert_eq!(f16_bits(0.333_333_34), 0x3555);
    }

    #[test]
    fn writes_whole_blocks_of_the_right_size_deterministically() {
        for &t in DIRECT_TYPES {
            let (block, bytes) = layout(t).unwrap();
            let n = block * 300;
            let mut a = Vec::new();
            write_random(&mut a, t, n, 7, 0.05).unwrap();
            assert_eq!(a.len() as u64, n / block * bytes as u64, "type {t}");
            let mut b = Vec::new();
            write_random(&mut b, t, n, 7, 0.05).unwrap();
            assert_eq!(a, b);
        }
        let mut v = Vec::new();
        assert!(write_random(&mut v, 2, 33, 1, 1.0).is_err());
        assert!(
            write_random(&mut v, 12, 256, 1, 1.0).is_err(),
            "Q4_K is not direct"
        );
    }

    #[test]
    fn q8_0_scales_are_finite_and_set() {
        let mut a = Vec::new();
        write_random(&mut a, 8, 64, 3, 0.127).unwrap();
        let d = u16::from_le_bytes([a[0], a[1]]);
        assert_eq!(d, f16_bits(0.001));
        assert_eq!(u16::from_le_bytes([a[34], a[35]]), d);
    }
}
