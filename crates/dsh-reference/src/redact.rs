//! Secret redaction (docs/references.md: secret redaction): credential-shaped strings in the
//! text a reference sends — session snapshots and file contexts — become `[redacted: kind]`.
//!
//! It runs after projection and before any byte is counted, outside the functions the
//! conformance vectors pin (they run with it off). The rules are regular expressions over
//! known shapes (provider key prefixes, cloud access keys, JWTs, private-key blocks,
//! `password=`/`secret=`/`token=` assignments) plus one measured rule: a high-entropy value
//! on a `.env`-style line. Crates that detect secrets were checked first (see the docs); none
//! is a stable library with this output, so the patterns are ours, over `regex`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// One kind of secret, as it appears in `[redacted: kind]`.
pub type SecretKind = &'static str;

/// One rule: the kind it reports, its pattern, and which part is the secret (0: the whole
/// match; 1: the first capture group that took part).
struct Rule {
    kind: SecretKind,
    pattern: Regex,
    group: usize,
    /// Decides per match whether it really is a secret (entropy, placeholders).
    accept: fn(&str) -> bool,
}

/// Every rule, in priority order: when two matches overlap, the one that starts first
/// wins; on the same start, the earlier rule.
static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    RULE_SOURCES
        .iter()
        .filter_map(|&(kind, source, group, accept)| {
            Regex::new(source).ok().map(|pattern| Rule {
                kind,
                pattern,
                group,
                accept,
            })
        })
        .collect()
});

/// The rule table (kind, pattern, secret group, check).
type RuleSource = (SecretKind, &'static str, usize, fn(&str) -> bool);

const RULE_SOURCES: &[RuleSource] = &[
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----(?:(?s:.*?)-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|(?:(?:\\n|\s)+[A-Za-z0-9+/=]{16,})*)",
        0,
        always,
    ),
    (
        "anthropic-api-key",
        r"\bsk-ant-[A-Za-z0-9_-]{20,}",
        0,
        always,
    ),
    (
        "openai-api-key",
        r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|\bsk-[A-Za-z0-9_-]{8,}T3BlbkFJ[A-Za-z0-9_-]{8,}",
        0,
        always,
    ),
    (
        "stripe-key",
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        0,
        always,
    ),
    ("api-key", r"\bsk-[A-Za-z0-9]{20,}\b", 0, always),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}", 0, always),
    (
        "aws-access-key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
        0,
        always,
    ),
    (
        "github-token",
        r"\bgh[pousr]_[A-Za-z0-9]{36,}|\bgithub_pat_[A-Za-z0-9_]{22,}",
        0,
        always,
    ),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}", 0, always),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0, always),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}", 0, always),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", 0, always),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        0,
        always,
    ),
    (
        "bearer-token",
        r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{20,}=*)",
        1,
        always,
    ),
    (
        "url-password",
        r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@]{1,64}:([^\s:/@]{3,128})@",
        1,
        not_placeholder,
    ),
    // `name = value` / `name: "value"` where the name says password, secret, token or key.
    (
        "password",
        r#"(?i)\b[a-z0-9_.-]*(?:passw(?:or)?d|pwd)[a-z0-9_.-]*["']?[ \t]*[=:][ \t]*(?:"([^"\r\n]{4,})"|'([^'\r\n]{4,})'|([^\s"'`,;)}\]]{4,}))"#,
        1,
        not_placeholder,
    ),
    (
        "secret",
        r#"(?i)\b[a-z0-9_.-]*secret[a-z0-9_.-]*["']?[ \t]*[=:][ \t]*(?:"([^"\r\n]{6,})"|'([^'\r\n]{6,})'|([^\s"'`,;)}\]]{6,}))"#,
        1,
        not_placeholder,
    ),
    (
        "token",
        r#"(?i)\b[a-z0-9_.-]*token[a-z0-9_.-]*["']?[ \t]*[=:][ \t]*(?:"([^"\r\n]{8,})"|'([^'\r\n]{8,})'|([^\s"'`,;)}\]]{8,}))"#,
        1,
        token_value,
    ),
    (
        "api-key",
        r#"(?i)\b[a-z0-9_.-]*api[_-]?key[a-z0-9_.-]*["']?[ \t]*[=:][ \t]*(?:"([^"\r\n]{8,})"|'([^'\r\n]{8,})'|([^\s"'`,;)}\]]{8,}))"#,
        1,
        token_value,
    ),
    // A `.env`-style line whose value is long and random-looking.
    (
        "env-value",
        r#"(?m)^[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*["']?([^\s"']{16,})["']?[ \t]*\r?$"#,
        1,
        high_entropy,
    ),
];

fn always(_: &str) -> bool {
    true
}

/// Words that name a type or stand in for a value in code and docs, never a secret.
const PLACEHOLDERS: &[&str] = &[
    "string",
    "str",
    "none",
    "null",
    "nil",
    "undefined",
    "true",
    "false",
    "bool",
    "boolean",
    "number",
    "int",
    "integer",
    "optional",
    "option",
    "any",
    "required",
    "secret",
    "password",
    "token",
    "redacted",
    "xxxx",
    "xxxxxx",
    "xxxxxxxx",
    "******",
    "********",
    "string|null",
];

/// A value that is not a placeholder, a type name, a variable or an expression.
fn not_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    if PLACEHOLDERS.contains(&lower.as_str()) || lower.starts_with("[redacted") {
        return false;
    }
    // `${VAR}`, `$VAR`, `<your-key>`, `{{ secret }}`, `os.environ[...]`, `process.env.X`, calls.
    let first = value.chars().next().unwrap_or(' ');
    if matches!(first, '$' | '<' | '{' | '(' | '[' | '%' | '*') {
        return false;
    }
    !(value.contains('(')
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("env.")
        || lower.starts_with("self.")
        || lower.starts_with("this."))
}

/// A token or key value: not a placeholder, and not a plain identifier or number (`token =
/// next_token`, `max_tokens: 4096`).
fn token_value(value: &str) -> bool {
    not_placeholder(value)
        && value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && shannon_bits(value) >= 3.0
}

/// A `.env` value random enough to be a credential: not a path, URL without credentials,
/// git object id or UUID, and at least 3.5 bits of entropy per character.
fn high_entropy(value: &str) -> bool {
    if !not_placeholder(value)
        || value.starts_with('/')
        || value.starts_with("./")
        || value.starts_with('~')
        || is_git_hash(value)
        || is_uuid(value)
    {
        return false;
    }
    let classes = [
        value.bytes().any(|b| b.is_ascii_lowercase()),
        value.bytes().any(|b| b.is_ascii_uppercase()),
        value.bytes().any(|b| b.is_ascii_digit()),
    ];
    classes.iter().filter(|&&c| c).count() >= 2 && shannon_bits(value) >= 3.5
}

/// A 40- or 64-digit hexadecimal object id.
fn is_git_hash(value: &str) -> bool {
    matches!(value.len(), 40 | 64) && value.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `8-4-4-4-12` hexadecimal digits.
fn is_uuid(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Shannon entropy of `value`'s bytes, in bits per byte.
#[allow(clippy::cast_precision_loss)] // counts of a short value
pub fn shannon_bits(value: &str) -> f64 {
    let mut counts = [0usize; 256];
    for b in value.bytes() {
        if let Some(c) = counts.get_mut(usize::from(b)) {
            *c += 1;
        }
    }
    let len = value.len() as f64;
    if len == 0.0 {
        return 0.0;
    }
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / len;
            -p * p.log2()
        })
        .sum()
}

/// How many secrets of each kind were redacted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactions {
    pub by_kind: BTreeMap<SecretKind, usize>,
}

impl Redactions {
    /// All redacted secrets.
    pub fn total(&self) -> usize {
        self.by_kind.values().sum()
    }

    /// Add `other`'s counts.
    pub fn add(&mut self, other: &Redactions) {
        for (kind, n) in &other.by_kind {
            *self.by_kind.entry(kind).or_default() += n;
        }
    }

    fn count(&mut self, kind: SecretKind) {
        *self.by_kind.entry(kind).or_default() += 1;
    }
}

/// One secret found: its byte range in the text and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    pub start: usize,
    pub end: usize,
    pub kind: SecretKind,
}

/// Every secret in `text`, in order, without overlaps.
pub fn find_secrets(text: &str) -> Vec<Finding> {
    let mut found: Vec<(usize, usize, usize, SecretKind)> = Vec::new();
    for (priority, rule) in RULES.iter().enumerate() {
        for caps in rule.pattern.captures_iter(text) {
            let part = if rule.group == 0 {
                caps.get(0)
            } else {
                caps.iter().skip(1).flatten().next()
            };
            let Some(m) = part else {
                continue;
            };
            if m.is_empty() || !(rule.accept)(m.as_str()) {
                continue;
            }
            found.push((m.start(), priority, m.end(), rule.kind));
        }
    }
    found.sort_unstable();
    let mut out: Vec<Finding> = Vec::with_capacity(found.len());
    for (start, _, end, kind) in found {
        if out.last().is_some_and(|last| start < last.end) {
            continue;
        }
        out.push(Finding { start, end, kind });
    }
    out
}

/// `text` with every secret replaced by `[redacted: kind]`, and the counts.
pub fn redact(text: &str) -> (Cow<'_, str>, Redactions) {
    let findings = find_secrets(text);
    let mut counts = Redactions::default();
    if findings.is_empty() {
        return (Cow::Borrowed(text), counts);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in findings {
        out.push_str(text.get(at..f.start).unwrap_or_default());
        out.push_str("[redacted: ");
        out.push_str(f.kind);
        out.push(']');
        counts.count(f.kind);
        at = f.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    (Cow::Owned(out), counts)
}

/// [`redact`] of an owned text when `on`, else the text unchanged with no counts.
pub fn redact_if(on: bool, text: String) -> (String, Redactions) {
    if !on {
        return (text, Redactions::default());
    }
    match redact(&text) {
        (Cow::Borrowed(_), counts) => (text, counts),
        (Cow::Owned(out), counts) => (out, counts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles() {
        assert_eq!(RULES.len(), RULE_SOURCES.len());
    }

    /// Examples of each kind, assembled at run time so no scanner flags this file.
    fn fake(prefix: &str, body: &str, n: usize) -> String {
        format!("{prefix}{}", body.repeat(n))
    }

    #[test]
    fn each_kind_is_redacted() {
        let pem = format!(
            "-----BEGIN {}PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nabc==\n-----END {}PRIVATE KEY-----",
            "RSA ", "RSA "
        );
        let cases: Vec<(String, &str, &str)> = vec![
            (
                format!("key {} end", fake("sk-ant-api03-", "aB3x", 10)),
                "key [redacted: anthropic-api-key] end",
                "anthropic-api-key",
            ),
            (
                format!("export {}", fake("sk-proj-", "Zx9Q", 12)),
                "export [redacted: openai-api-key]",
                "openai-api-key",
            ),
            (
                format!("use {} please", fake("sk-", "a1b2c3d4", 4)),
                "use [redacted: api-key] please",
                "api-key",
            ),
            (
                fake("sk_live_", "4eC39HqLyjWDarjt", 2),
                "[redacted: stripe-key]",
                "stripe-key",
            ),
            (
                format!(
                    "g={}!",
                    fake("AIza", "SyDdI0hCZtE6vySjMm", 2)[..39].to_owned()
                ),
                "g=[redacted: google-api-key]!",
                "google-api-key",
            ),
            (
                format!("id {} ok", fake("AKIA", "IOSFODNN7EXAMPLE", 1)),
                "id [redacted: aws-access-key] ok",
                "aws-access-key",
            ),
            (
                format!("{} x", fake("ghp_", "A1b2C3d4E5f6", 3)),
                "[redacted: github-token] x",
                "github-token",
            ),
            (
                fake("glpat-", "xY12", 6),
                "[redacted: gitlab-token]",
                "gitlab-token",
            ),
            (
                fake("xoxb-", "1234-abcd", 3),
                "[redacted: slack-token]",
                "slack-token",
            ),
            (
                fake("hf_", "AbCdEfGh12", 4),
                "[redacted: huggingface-token]",
                "huggingface-token",
            ),
            (
                fake("npm_", "aB3dE6gH9j", 4)[..40].to_owned(),
                "[redacted: npm-token]",
                "npm-token",
            ),
            (
                format!(
                    "t {}.{}.{} t",
                    fake("eyJ", "hbGciOiJIUzI1", 1),
                    fake("eyJ", "zdWIiOiIxMjM0", 1),
                    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
                ),
                "t [redacted: jwt] t",
                "jwt",
            ),
            (
                format!("Authorization: Bearer {}", fake("", "q8Zr2kLm", 4)),
                "Authorization: Bearer [redacted: bearer-token]",
                "bearer-token",
            ),
            (
                "postgres://app:hunter2x@db.local/app".to_owned(),
                "postgres://app:[redacted: url-password]@db.local/app",
                "url-password",
            ),
            (
                "DB_PASSWORD=hunter2".to_owned(),
                "DB_PASSWORD=[redacted: password]",
                "password",
            ),
            (
                "password: \"correct horse\"".to_owned(),
                "password: \"[redacted: password]\"",
                "password",
            ),
            (
                "client_secret = 'abcdef12'".to_owned(),
                "client_secret = '[redacted: secret]'",
                "secret",
            ),
            (
                "auth_token=9f8e7d6c5b4a".to_owned(),
                "auth_token=[redacted: token]",
                "token",
            ),
            (
                "\"apiKey\": \"k3y-0f-mine-77\"".to_owned(),
                "\"apiKey\": \"[redacted: api-key]\"",
                "api-key",
            ),
            (
                "SENTRY_DSN=aZ8kP2qL9mX4vB7nC1rT\n".to_owned(),
                "SENTRY_DSN=[redacted: env-value]\n",
                "env-value",
            ),
            (
                format!("before\n{pem}\nafter"),
                "before\n[redacted: private-key]\nafter",
                "private-key",
            ),
            (
                format!("cut {}", &pem[..60]),
                "cut [redacted: private-key]",
                "private-key",
            ),
        ];
        for (input, want, kind) in cases {
            let (got, counts) = redact(&input);
            assert_eq!(got, want, "{input:?}");
            assert_eq!(counts.by_kind.get(kind), Some(&1), "{input:?}: {counts:?}");
            assert_eq!(counts.total(), 1, "{input:?}");
        }
    }

    #[test]
    fn near_misses_stay() {
        let image = format!(
            "![x](data:image/png;base64,{}",
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg"
                .repeat(3)
        );
        let cases = [
            "commit 3f5d17c0a9b1e2d3c4b5a69788990011aabbccdd fixed it",
            "GIT_SHA=3f5d17c0a9b1e2d3c4b5a69788990011aabbccdd",
            "id 123e4567-e89b-12d3-a456-426614174000 and",
            "SESSION=123e4567-e89b-12d3-a456-426614174000",
            image.as_str(),
            "password: string",
            "token: Option<String>,",
            "password=${DB_PASSWORD}",
            "secret = os.environ[\"SECRET\"]",
            "max_tokens: 4096",
            "token = next_token",
            "let token = tokens.next()",
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "LOG_LEVEL=debug",
            "RUST_LOG=dsh_refs=debug,info",
            "ask-me-anything is a skill",
            "see https://example.com/a:b@c",
            "The password is shown in the settings page.",
            "desk-organizer-2000-deluxe-edition-xl",
        ];
        for input in cases {
            let (got, counts) = redact(input);
            assert_eq!(got, input, "{input:?} -> {counts:?}");
        }
    }

    #[test]
    fn counts_add_up_and_text_without_secrets_is_borrowed() {
        let text = format!(
            "a {} b {} c",
            fake("ghp_", "A1b2C3d4E5f6", 3),
            fake("ghp_", "Z9y8X7w6V5u4", 3)
        );
        let (got, counts) = redact(&text);
        assert_eq!(
            got,
            "a [redacted: github-token] b [redacted: github-token] c"
        );
        assert_eq!(counts.total(), 2);
        let (plain, none) = redact("nothing here");
        assert!(matches!(plain, Cow::Borrowed(_)));
        assert_eq!(none.total(), 0);
    }

    #[test]
    fn entropy_of_simple_strings() {
        assert!(shannon_bits("aaaa").abs() < f64::EPSILON);
        assert!((shannon_bits("abcd") - 2.0).abs() < 1e-9);
        assert!(shannon_bits("").abs() < f64::EPSILON);
    }
}
