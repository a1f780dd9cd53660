use super::Exporter;
use crate::record::RunRecord;

/// The whole result document, pretty-printed.
pub struct Json;

impl Exporter for Json {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(run).expect("records always serialize");
        v.push(b'\n');
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    #[test]
    fn round_trips_through_serde() {
        let run = fixtures::run();
        let back: RunRecord = serde_json::from_slice(&Json.render(&run)).unwrap();
        assert_eq!(back, run);
    }
}
