//! Outlier classification with Tukey's fences, as criterion reports it.

use super::quantile;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Outliers {
    /// Below q1 − 3·IQR.
    pub low_severe: u32,
    /// Between q1 − 3·IQR and q1 − 1.5·IQR.
    pub low_mild: u32,
    /// Between q3 + 1.5·IQR and q3 + 3·IQR.
    pub high_mild: u32,
    /// Above q3 + 3·IQR.
    pub high_severe: u32,
}

/// Classifies each sample against Tukey's fences of the sample.
pub fn classify(xs: &[f64]) -> Outliers {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let mut o = Outliers::default();
    if s.len() < 4 {
        return o;
    }
    let (q1, q3) = (quantile(&s, 0.25), quantile(&s, 0.75));
    let iqr = q3 - q1;
    for &x in &s {
        if x < q1 - 3.0 * iqr {
            o.low_severe += 1;
        } else if x < q1 - 1.5 * iqr {
            o.low_mild += 1;
        } else if x > q3 + 3.0 * iqr {
            o.high_severe += 1;
        } else if x > q3 + 1.5 * iqr {
            o.high_mild += 1;
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tight_data_has_no_outliers() {
        let tight = classify(&[10.0, 10.1, 9.9, 10.0, 10.05, 9.95]);
        assert_eq!(tight, Outliers::default());
    }

    #[test]
    fn far_points_are_severe_and_near_points_mild() {
        // q1 = 10, q3 = 11, IQR = 1 on the bulk of the data.
        let mut xs = vec![10.0, 10.0, 10.5, 10.5, 11.0, 11.0, 10.25, 10.75];
        xs.push(20.0); // far above: severe
        xs.push(8.0); // between 1.5 and 3 IQR below: mild
        let o = classify(&xs);
        assert_eq!(o.high_severe, 1, "{o:?}");
        assert_eq!(o.low_mild, 1, "{o:?}");
        assert_eq!((o.low_severe, o.high_mild), (0, 0), "{o:?}");
    }

    #[test]
    fn too_few_samples_are_never_outliers() {
        assert_eq!(classify(&[1.0, 100.0, 1000.0]), Outliers::default());
    }
}
