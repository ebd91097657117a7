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
    /// Whether secrets in snapshots and file contexts become `[redacted: kind]`.
    pub redact_secrets: bool,
    /// Messages kept on each side of an excerpt's matched message.
    pub excerpt_context: usize,
    /// Distinct files one message may attach.
    pub max_files: usize,
    /// UTF-8 bytes of one attached file's text (after the cut).
    pub max_file_bytes: usize,
    /// The references' share of what the context window has left, in millionths (the key
    /// `share`, a fraction in (0, 1]: docs/references.md, the budget plan).
    pub share_millionths: u32,
}

/// Hard upper bound on `excerpt_context`.
pub const MAX_EXCERPT_CONTEXT: i64 = 50;
/// Hard upper bound on `max_files`.
pub const MAX_FILES_LIMIT: i64 = 10;
/// Least `max_file_bytes`: room for the omission notice and a little text.
pub const MIN_FILE_BYTES: i64 = 256;

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
            ..ReferenceConfig::default()
        })
    }

    /// With `redact_secrets` set.
    #[must_use]
    pub fn with_redaction(self, redact_secrets: bool) -> Self {
        ReferenceConfig {
            redact_secrets,
            ..self
        }
    }

    /// With `excerpt_context` validated (0 to 50).
    pub fn with_excerpt_context(self, excerpt_context: i64) -> Result<Self, ReferenceError> {
        let n = usize::try_from(excerpt_context)
            .ok()
            .filter(|_| excerpt_context <= MAX_EXCERPT_CONTEXT)
            .ok_or_else(|| {
                ReferenceError::invalid_config(
                    "excerpt_context",
                    "must be an integer from 0 to 50",
                    excerpt_context,
                )
            })?;
        Ok(ReferenceConfig {
            excerpt_context: n,
            ..self
        })
    }

    /// With the file limits validated: `max_files` 1 to 10, `max_file_bytes` at least 256.
    pub fn with_file_limits(
        self,
        max_files: i64,
        max_file_bytes: i64,
    ) -> Result<Self, ReferenceError> {
        let files = usize::try_from(max_files)
            .ok()
            .filter(|_| (1..=MAX_FILES_LIMIT).contains(&max_files))
            .ok_or_else(|| {
                ReferenceError::invalid_config(
                    "max_files",
                    "must be an integer from 1 to 10",
                    max_files,
                )
            })?;
        let bytes = usize::try_from(max_file_bytes)
            .ok()
            .filter(|_| max_file_bytes >= MIN_FILE_BYTES)
            .ok_or_else(|| {
                ReferenceError::invalid_config(
                    "max_file_bytes",
                    "must be an integer of at least 256",
                    max_file_bytes,
                )
            })?;
        Ok(ReferenceConfig {
            max_files: files,
            max_file_bytes: bytes,
            ..self
        })
    }
}

impl ReferenceConfig {
    /// With `share` validated: a fraction in (0, 1] (kept to millionths).
    pub fn with_share(self, share: f64) -> Result<Self, ReferenceError> {
        if !(share > 0.0 && share <= 1.0) {
            return Err(ReferenceError::new(
                super::error::ErrorCode::InvalidConfig,
                format!(
                    "invalid reference setting `share`: must be a fraction greater than 0 and \
                     at most 1 (got {share})"
                ),
            ));
        }
        // A fraction of at most 1 in millionths fits a u32; at least one millionth stays.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let millionths = ((share * 1_000_000.0).round() as u32).max(1);
        Ok(ReferenceConfig {
            share_millionths: millionths,
            ..self
        })
    }

    /// The references' share of what the context window has left.
    pub fn share(&self) -> f64 {
        f64::from(self.share_millionths) / 1_000_000.0
    }
}

impl Default for ReferenceConfig {
    fn default() -> Self {
        ReferenceConfig {
            max_references: 3,
            candidate_limit: 50,
            max_reference_bytes: 65536,
            redact_secrets: true,
            excerpt_context: 2,
            max_files: 3,
            max_file_bytes: 32768,
            share_millionths: 500_000,
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
            assert!(err.message.contains(key));
        }
        let base = ReferenceConfig::default();
        assert!(base.redact_secrets);
        assert!(!base.with_redaction(false).redact_secrets);
        assert_eq!(base.with_excerpt_context(0).unwrap().excerpt_context, 0);
        assert_eq!(base.with_excerpt_context(50).unwrap().excerpt_context, 50);
        let c = base.with_file_limits(10, 256).unwrap();
        assert_eq!((c.max_files, c.max_file_bytes), (10, 256));
        assert_eq!(base.share_millionths, 500_000);
        assert!((base.share() - 0.5).abs() < 1e-9);
        assert_eq!(base.with_share(1.0).unwrap().share_millionths, 1_000_000);
        assert_eq!(base.with_share(0.25).unwrap().share_millionths, 250_000);
        let extra: [(Result<ReferenceConfig, ReferenceError>, &str); 9] = [
            (base.with_share(0.0), "share"),
            (base.with_share(1.5), "share"),
            (base.with_share(f64::NAN), "share"),
            (base.with_share(-0.1), "share"),
            (base.with_excerpt_context(-1), "excerpt_context"),
            (base.with_excerpt_context(51), "excerpt_context"),
            (base.with_file_limits(0, 1000), "max_files"),
            (base.with_file_limits(11, 1000), "max_files"),
            (base.with_file_limits(3, 255), "max_file_bytes"),
        ];
        for (got, key) in extra {
            let err = got.unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidConfig);
            assert!(
                err.message.contains(key),
                "{} should name {key}",
                err.message
            );
        }
    }
}
