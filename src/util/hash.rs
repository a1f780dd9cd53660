//! SHA-256 as lowercase hex: file and text hashes, test identities and plan hashes all
//! print through here.

use sha2::{Digest, Sha256};

pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex(Sha256::digest(bytes))
}

/// A finished digest (`hasher.finalize()`) in lowercase hex.
pub fn hex(digest: impl std::fmt::LowerHex) -> String {
    format!("{digest:x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_string_hashes_to_the_published_value() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let mut h = Sha256::new();
        h.update(b"");
        assert_eq!(hex(h.finalize()), sha256_hex(""));
    }
}
