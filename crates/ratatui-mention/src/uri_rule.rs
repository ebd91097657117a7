//! Which finished mentions are the host's: the URIs it registered (schemes, or a predicate).
//! With none registered every well-formed mention is one.

use std::fmt;
use std::sync::Arc;

/// Decides whether a mention's (decoded) URI is one of the host's.
#[derive(Clone, Default)]
pub enum UriRule {
    /// Every URI (nothing registered).
    #[default]
    Any,
    /// URIs starting with one of these schemes (`user:`, `team:`).
    Schemes(Vec<String>),
    /// URIs the host's predicate accepts.
    Predicate(Arc<dyn Fn(&str) -> bool + Send + Sync>),
}

impl UriRule {
    /// Whether `uri` belongs to the host's mentions.
    pub fn accepts(&self, uri: &str) -> bool {
        match self {
            UriRule::Any => true,
            UriRule::Schemes(schemes) => schemes.iter().any(|s| uri.starts_with(s.as_str())),
            UriRule::Predicate(accepts) => accepts(uri),
        }
    }

    /// The rule with `scheme` registered too.
    #[must_use]
    pub fn with_scheme(self, scheme: String) -> Self {
        match self {
            UriRule::Schemes(mut schemes) => {
                schemes.push(scheme);
                UriRule::Schemes(schemes)
            }
            UriRule::Any | UriRule::Predicate(_) => UriRule::Schemes(vec![scheme]),
        }
    }
}

/// The builder methods `with_uri_scheme` and `with_uri_predicate` of a type whose
/// [`UriRule`] is `self.<path>`, each with the docs given.
macro_rules! uri_rule_builders {
    ($($path:ident).+, scheme: { $(#[$scheme:meta])* }, predicate: { $(#[$predicate:meta])* }) => {
        $(#[$scheme])*
        #[must_use]
        pub fn with_uri_scheme(mut self, scheme: impl Into<String>) -> Self {
            self.$($path).+ = std::mem::take(&mut self.$($path).+).with_scheme(scheme.into());
            self
        }

        $(#[$predicate])*
        #[must_use]
        pub fn with_uri_predicate(
            mut self,
            accepts: impl Fn(&str) -> bool + Send + Sync + 'static,
        ) -> Self {
            self.$($path).+ = crate::uri_rule::UriRule::Predicate(std::sync::Arc::new(accepts));
            self
        }
    };
}
pub(crate) use uri_rule_builders;

impl fmt::Debug for UriRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UriRule::Any => f.write_str("Any"),
            UriRule::Schemes(schemes) => f.debug_tuple("Schemes").field(schemes).finish(),
            UriRule::Predicate(_) => f.write_str("Predicate(..)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_accept_what_the_host_registered() {
        assert!(UriRule::Any.accepts("anything:1"));
        let schemes = UriRule::Any
            .with_scheme("user:".into())
            .with_scheme("team:".into());
        assert!(schemes.accepts("user:ada") && schemes.accepts("team:x"));
        assert!(!schemes.accepts("topic:ImEi"));
        let files = UriRule::Predicate(Arc::new(|u: &str| u.starts_with("file:src/")));
        assert!(files.accepts("file:src/main.rs") && !files.accepts("file:README.md"));
        assert_eq!(format!("{files:?}"), "Predicate(..)");
    }
}
