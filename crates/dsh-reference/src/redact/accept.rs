//! Which matched values really are secrets (docs/references.md: secret redaction, values that
//! stay): placeholders, type names, variables and expressions are not, and each rule may ask
//! for more (a digit and a letter, entropy).

/// Words that name a type or stand in for a value in code and docs, never a secret
/// (compared without case).
const PLACEHOLDER_WORDS: &[&str] = &[
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
    "changeme",
    "string|null",
    // Type names of the languages people paste (`password: usize`, `token: c_long`).
    "usize",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "f32",
    "f64",
    "char",
    "byte",
    "bytes",
    "text",
    "float",
    "double",
    "long",
    "object",
    "unknown",
    "void",
    "secretstr",
    "secretstring",
    "securestring",
    "pass",
    "passwd",
    "impl",
    "dyn",
    "mut",
    "unsafe",
    "async",
    "await",
    "match",
    "move",
    "loop",
    "const",
    "static",
    "new",
];

/// Any value.
pub fn always(_: &str) -> bool {
    true
}

/// A value that is not a placeholder, a variable or an expression — the documented list,
/// exactly:
/// - a placeholder word or type name ([`PLACEHOLDER_WORDS`]), or a mask: only `*`, only
///   `x`/`X`, or only `.` (`********`, `xxxx`, `...`);
/// - an earlier redaction (`[redacted…`);
/// - a variable: `${NAME…}`, `$NAME`, `%NAME%`, `$(command…)`;
/// - a template slot: `<…>`, `{{…`, `{name}`, `%(name)s`;
/// - an expression: `os.environ…`, `process.env…`, `env.…`, `self.…`, `this.…`, a path of
///   names (`config.db.password`, `Secret::Kind`), a call (a path followed by `(`);
/// - a type: `&…` (`&str`), `*mut`/`*const`, a generic (`Option<String>`), `impl`/`dyn`;
/// - code: a list or group (`[…`, `(…`), a short hex literal (`0x0017`), an index or a
///   macro (`key[len`, `vec![0`).
///
/// Anything else is a secret, whatever character it starts with (`*Xk9!mQ`, `%Tq8…`,
/// `$abc!`).
pub fn not_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    !(PLACEHOLDER_WORDS.contains(&lower.as_str())
        || is_mask(value)
        || lower.starts_with("[redacted")
        || is_variable(value)
        || is_template_slot(value)
        || is_expression(&lower)
        || is_type(&lower)
        || is_code_literal(&lower))
}

/// `********`, `xxxx`, `XXXXXXXX`, `...`: a value written to be replaced.
fn is_mask(value: &str) -> bool {
    let Some(first) = value.chars().next() else {
        return true;
    };
    matches!(first, '*' | 'x' | 'X' | '.' | '•')
        && value.chars().all(|c| {
            c == first || (first.eq_ignore_ascii_case(&'x') && c.eq_ignore_ascii_case(&'x'))
        })
}

/// `${…}`, `$NAME`, `%NAME%`, `$(…)` (a shell substitution). An unquoted value ends at the
/// first `}` `)` `]`, so `${NAME` and `$(cmd` count too.
fn is_variable(value: &str) -> bool {
    if let Some(rest) = value.strip_prefix("${") {
        return starts_with_name(rest);
    }
    if let Some(rest) = value.strip_prefix("$(") {
        return starts_with_name(rest);
    }
    if let Some(name) = value.strip_prefix('$') {
        return is_name(name);
    }
    value
        .strip_prefix('%')
        .and_then(|v| v.strip_suffix('%'))
        .is_some_and(is_name)
}

/// `<your-key>`, `{{ secret }}`, `{password}`, `%(password)s` (or cut at their closing
/// bracket: `{password`, `%(password`).
fn is_template_slot(value: &str) -> bool {
    let inner = |open: &str, close: &str| {
        value
            .strip_prefix(open)
            .map(|v| v.strip_suffix(close).unwrap_or(v))
    };
    (value.starts_with('<') && value.ends_with('>'))
        || value.starts_with("{{")
        || inner("{", "}").is_some_and(is_dotted_name)
        || inner("%(", ")s").is_some_and(is_name)
}

/// `s` begins with an identifier.
fn starts_with_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// `os.environ[…]`, `process.env.X`, `env.X`, `self.x`, `this.x`, `node.token`,
/// `Kind::Secret`, `getpass(`, `PrivateKeyDer::from(` (`lower` is the value in lower case).
/// A value cut at a bracket (`os.environ[`, `getpass(`) counts.
fn is_expression(lower: &str) -> bool {
    if [
        "os.environ",
        "os.getenv",
        "process.env",
        "env.",
        "self.",
        "this.",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
    {
        return true;
    }
    // A path of names (at least two), or a call: a path (type arguments allowed, a macro's
    // `!`), then `(`; in parentheses or behind `&`, `*`, `!` alike.
    let lower = lower.trim_start_matches(['(', '&', '*', '!']);
    let path = |s: &str| s.contains(['.', ':']) && is_dotted_name(s);
    let callee = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.:<>&!".contains(c))
    };
    path(lower.trim_end_matches([',', ';']))
        || lower.split_once(['(', '[']).is_some_and(|(c, _)| callee(c))
}

/// `[0x42u8`, `(a, b`, `0x0017`, `0x80041041,`, `1i32`: a list, a group, a hex number of at
/// most 16 digits, an integer with a Rust type suffix.
fn is_code_literal(lower: &str) -> bool {
    let lower = lower.trim_end_matches([',', ';']);
    let suffixed = [
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
    ]
    .iter()
    .any(|t| {
        lower
            .strip_suffix(t)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit() || b == b'_'))
    });
    suffixed
        || lower.starts_with(['[', '('])
        || lower.strip_prefix("0x").is_some_and(|hex| {
            (1..=16).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

/// `&str`, `&mut Secrets`, `*mut`, `*const c_char`, `Option<String>`, `Kind::Name`: a type
/// written where a value would be.
fn is_type(lower: &str) -> bool {
    lower.starts_with('&')
        || lower.starts_with("*mut")
        || lower.starts_with("*const")
        || lower.contains("::")
        || lower
            .split_once('<')
            .is_some_and(|(head, _)| is_dotted_name(head))
}

/// `DB_PASSWORD`, `CLIENT_EARLY_TRAFFIC_SECRET`: a constant's or variable's name in
/// screaming snake case (two words or more).
pub fn is_constant_name(value: &str) -> bool {
    value.contains('_')
        && value.chars().any(|c| c.is_ascii_uppercase())
        && value
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// A plain name: letters, digits, `_`.
pub fn is_plain_name(value: &str) -> bool {
    is_name(value)
}

/// A plain name that may still be a password: it holds a digit and a lower-case letter and
/// is not snake case (`PULONG64`, `c_long`, `CString` are types).
pub fn plain_name_secret(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_lowercase())
        && !is_snake_name(value)
}

/// `_bindgen_ty_7`, `LINUX_REBOOT_CMD_HALT`, `clock_nanosleep_time64`: a name written in
/// snake or screaming case — words of one case joined by `_`, each maybe ending in digits.
pub fn is_snake_name(value: &str) -> bool {
    value.contains('_')
        && value.split('_').filter(|w| !w.is_empty()).all(|w| {
            let letters = w.trim_end_matches(|c: char| c.is_ascii_digit());
            letters.chars().all(|c| c.is_ascii_lowercase())
                || letters.chars().all(|c| c.is_ascii_uppercase())
        })
        && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An identifier: a letter or `_`, then letters, digits and `_`.
fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Identifiers joined by `.` or `::` (`config.db.password`, `env::var`).
fn is_dotted_name(s: &str) -> bool {
    !s.is_empty() && s.replace("::", ".").split('.').all(is_name)
}

/// A token or key value: not a placeholder, and not a plain identifier or number (`token =
/// next_token`, `max_tokens: 4096`): a digit, a letter and 3+ bits of entropy per byte.
pub fn token_value(value: &str) -> bool {
    not_placeholder(value)
        && !is_snake_name(value)
        && value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && shannon_bits(value) >= 3.0
}

/// A value on a line whose name says key, secret, token or password: not a placeholder,
/// path or plain word — it holds a digit and a letter (hex keys, git-object-sized keys and
/// UUIDs included: the name says what they are).
pub fn named_env_value(value: &str) -> bool {
    not_placeholder(value)
        && !is_path(value)
        && !is_snake_name(value)
        && !is_constant_name(value)
        && !value.ends_with([',', ';', ')'])
        && !value.contains("://")
        && value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
}

/// A `.env` value random enough to be a credential: not a placeholder, path, git object id,
/// UUID, snake-case name or code (ending in `,` `;` `)`), a digit and a letter, and at least
/// 3.5 bits of entropy per byte.
pub fn high_entropy(value: &str) -> bool {
    if !not_placeholder(value)
        || is_path(value)
        || is_git_hash(value)
        || is_uuid(value)
        || is_snake_name(value)
        || is_constant_name(value)
        || value.ends_with([',', ';', ')'])
    {
        return false;
    }
    value.bytes().any(|b| b.is_ascii_digit())
        && value.bytes().any(|b| b.is_ascii_alphabetic())
        && shannon_bits(value) >= 3.5
}

/// A multi-word value after a name on a YAML-style line (`password: correct horse battery`):
/// more than one word, not a placeholder in its first word, and not code (a line ending in
/// `,` `;` `{` `(` `[` or holding `=`/`(`).
pub fn line_value(value: &str) -> bool {
    let first = value.split_whitespace().next().unwrap_or_default();
    value.contains(' ')
        && not_placeholder(first)
        && !value.ends_with([',', ';', '{', '(', '['])
        && !value.contains(['=', '('])
}

/// A multi-word line value that also passes [`token_value`] (a token or key, not prose).
pub fn line_token_value(value: &str) -> bool {
    line_value(value) && value.split_whitespace().any(token_value)
}

/// `/…`, `./…`, `~…`: a file, not a secret.
fn is_path(value: &str) -> bool {
    value.starts_with('/') || value.starts_with("./") || value.starts_with('~')
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example docs/references.md gives of a value that stays, and the three the
    /// attack pass found passing as placeholders though the docs do not list them.
    #[test]
    fn the_documented_placeholders_stay_and_nothing_else_does() {
        let stay = [
            "string",
            "None",
            "null",
            "true",
            "password",
            "xxxx",
            "XXXXXXXX",
            "********",
            "...",
            "${DB_PASSWORD}",
            "$DB_PASSWORD",
            "%DB_PASSWORD%",
            "$(pass show db)",
            "<your-key>",
            "{{ secret }}",
            "{password}",
            "{password",
            "%(password)s",
            "%(password",
            "${DB_PASSWORD",
            "$(pass",
            "os.environ[",
            "os.getenv(",
            "process.env.DB_PASSWORD",
            "env.DB_PASSWORD",
            "self.password",
            "this.password",
            "getpass(",
            "config.db.password(",
            "env::var(",
            "[redacted: password]",
            // Code: paths, calls, types.
            "node.or2_token",
            "SecretKind::ServerApplicationTrafficSecret",
            "PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(",
            "u.arbitrary::<&str>(",
            "&str",
            "&Secrets",
            "*mut",
            "Option<P>",
            "usize",
            "(node.colon2_token",
            "quote!(..100u32",
            "unsafe",
            "[0x42u8",
            "vec![0",
            "derived_key[derived_key_len",
            "0x0017",
            "0x80041041,",
            "1i32",
            "8u32",
        ];
        for value in stay {
            assert!(!not_placeholder(value), "{value:?} should stay");
        }
        let secrets = [
            "*Xk9!mQ2",
            "%Tq8zL1",
            "$abc!",
            "$1$salt$hash",
            "<unterminated",
            "{not a slot",
            "${",
            "$(1",
            "0x9f86d081884c7d659a2feaa0",
            "hunter2",
            "x1x1",
            "**x*",
        ];
        for value in secrets {
            assert!(not_placeholder(value), "{value:?} should be redacted");
        }
    }

    #[test]
    fn snake_case_names_are_not_tokens_or_env_secrets() {
        for name in [
            "_bindgen_ty_7",
            "LINUX_REBOOT_CMD_HALT",
            "__clock_nanosleep_time64",
        ] {
            assert!(!token_value(name) && !high_entropy(name), "{name}");
        }
        assert!(token_value("9f8e7d6c_5b4aX") && high_entropy("aZ8kP2qL9mX4vB7nC1rT"));
    }

    #[test]
    fn entropy_of_simple_strings() {
        assert!(shannon_bits("aaaa").abs() < f64::EPSILON);
        assert!((shannon_bits("abcd") - 2.0).abs() < 1e-9);
        assert!(shannon_bits("").abs() < f64::EPSILON);
    }
}
