use super::Exporter;
use crate::record::RunRecord;

/// The whole result document, pretty-printed.
pub struct Json;

impl Exporter for Json {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        crate::record::results::to_json_bytes(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn round_trips_through_serde() {
        let run = fixtures::run();
        let back: RunRecord = serde_json::from_slice(&Json.render(&run)).unwrap();
        assert_eq!(back, run);
    }
}
