//! Validated settings of the reference service (docs/references.md: configuration).

use super::error::ReferenceError;

/// Limits of the reference service. Build with [`ReferenceConfig::new`] to validate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReferenceConfig {
    /// Distinct sessions one message may reference (1..=3).
    pub max_references: usize,
    /// Default number of candidates returned.
    pub candidate_limit: usize,
    /// Bytes of one serialized source object.
    pub max_reference_bytes: usize,
}

/// Hard upper bound on `max_references`.
pub const MAX_REFERENCES_LIMIT: i64 = 3;

impl ReferenceConfig {
    /// Validate raw (possibly user-supplied) values; errors name the offending key.
    pub fn new(
        max_references: i64,
        candidate_limit: i64,
        max_reference_bytes: i64,
    ) -> Result<Self, ReferenceError> {
        if !(1..=MAX_REFERENCES_LIMIT).contains(&max_references) {
            return Err(ReferenceError::invalid_config(
                "max_references",
                "must be an integer from 1 to 3",
                max_references,
            ));
        }
        let positive = |key: &str, v: i64| -> Result<usize, ReferenceError> {
            match usize::try_from(v) {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(ReferenceError::invalid_config(
                    key,
                    "must be a positive integer",
                    v,
                )),
            }
        };
        Ok(ReferenceConfig {
            max_references: positive("max_references", max_references)?,
            candidate_limit: positive("candidate_limit", candidate_limit)?,
            max_reference_bytes: positive("max_reference_bytes", max_reference_bytes)?,
        })
    }
}

impl Default for ReferenceConfig {
    fn default() -> Self {
        ReferenceConfig {
            max_references: 3,
            candidate_limit: 50,
            max_reference_bytes: 65536,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn accepts_valid_values() {
        assert_eq!(
            ReferenceConfig::new(3, 50, 65536).unwrap(),
            ReferenceConfig::default()
        );
        let c = ReferenceConfig::new(1, 1, 1).unwrap();
        assert_eq!(
            (c.max_references, c.candidate_limit, c.max_reference_bytes),
            (1, 1, 1)
        );
    }

    #[test]
    fn rejects_out_of_range_values_naming_the_key() {
        let cases = [
            ((0, 50, 10), "max_references"),
            ((4, 50, 10), "max_references"),
            ((-1, 50, 10), "max_references"),
            ((3, 0, 10), "candidate_limit"),
            ((3, -5, 10), "candidate_limit"),
            ((3, 50, 0), "max_reference_bytes"),
            ((3, 50, i64::MIN), "max_reference_bytes"),
        ];
        for ((a, b, c), key) in cases {
            let err = ReferenceConfig::new(a, b, c).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidConfig);
            assert!(
                err.message.contains(key),
                "{} should name {key}",
                err.message
            );
        }
    }
}
