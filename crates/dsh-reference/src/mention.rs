//! Inline mention formatting (docs/references.md: URIs and mentions): `@[label](dsh-session:…)`.

use super::uri::encode_uri;

/// `@[` + label (default: the id) with `\` and `]` backslash-escaped + `](` + URI + `)`.
pub fn format_mention(id: &str, label: Option<&str>) -> String {
    mention_with_uri(label.unwrap_or(id), &encode_uri(id))
}

/// `@[label](uri)` with `\` and `]` in the label backslash-escaped (any scheme).
pub fn mention_with_uri(label: &str, uri: &str) -> String {
    let mut out = String::with_capacity(label.len() + uri.len() + 8);
    out.push_str("@[");
    for c in label.chars() {
        if c == '\\' || c == ']' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push_str("](");
    out.push_str(uri);
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_escapes_and_default_label() {
        let cases = [
            ("a", None, "@[a](dsh-session:ImEi)"),
            ("a", Some(""), "@[](dsh-session:ImEi)"),
            ("a", Some("x]y\\z[)"), "@[x\\]y\\\\z[)](dsh-session:ImEi)"),
            ("a]", None, "@[a\\]](dsh-session:ImFdIg)"),
        ];
        for (id, label, want) in cases {
            assert_eq!(format_mention(id, label), want);
        }
    }
}
