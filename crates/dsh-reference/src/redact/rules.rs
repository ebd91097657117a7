//! The rule table (docs/references.md: secret redaction): what each rule finds, which part is
//! the secret, how its kind is named, and the prefix it keys on (the linearity test repeats
//! it; a label ending in a key cut short is recognised by it).
//!
//! Every pattern is written for a lazy DFA that never reads far past a match: no lazy
//! quantifier that may run to the end of the text, no Unicode word boundary (`(?-u:\b)`),
//! multi-line shapes (PEM blocks, `PuTTY` keys, `.netrc` records) as greedy runs of lines.

use super::SecretKind;
use super::accept::{
    always, high_entropy, is_constant_name, is_plain_name, line_token_value, line_value,
    named_env_value, not_placeholder, plain_name_secret, token_value,
};
use super::scanner::Skip;

/// How a rule names what it found.
#[derive(Clone, Copy)]
pub enum Judge {
    /// Always this kind, when the check accepts the secret part.
    Fixed(SecretKind, fn(&str) -> bool),
    /// The kind the name before the value says (see [`kind_of_name`]), with that kind's
    /// checks ([`named_line_value`]'s when `line`: the value is the rest of a line).
    ByName { line: bool },
}

/// One rule as written.
pub struct RuleSource {
    /// What the rule is about, for the docs and test names.
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the table tests"))]
    pub name: &'static str,
    pub pattern: String,
    pub judge: Judge,
    /// The rule's own prefix: the text the linearity test repeats.
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the table tests"))]
    pub probe: &'static str,
    /// Where its matches can start (what a search may jump to).
    pub skip: Skip,
    /// Literal prefixes of the keys this rule finds (empty for rules keyed on a name): a
    /// label or displayed title ending in one of them followed by key characters is a key
    /// cut short.
    pub key_prefixes: &'static [&'static str],
}

/// Line breaks inside a block: real ones, escaped ones (`\n` in a JSON string), spaces.
const BLOCK_GAP: &str = r"(?:[ \t\r\n]|\\r|\\n)+";

/// A whole line of base64: 16+ characters, or fewer at a line's end (the last line of a
/// block is short).
const BASE64_LINE: &str = r"[A-Za-z0-9+/=]{16,}|[A-Za-z0-9+/=]{1,15}(?Rm:$)";

/// A name that says what its value is, and the checks each kind asks for.
const NAME: &str = r"(?:passw(?:or)?d|passphrase|pwd|secret|token|api[_-]?key|apikey|(?:access|auth|account|private|client|master|encryption|signing|shared[_-]?access)[_-]?key)";

/// The first letters of every [`NAME`], any case: where a named value can start.
const NAME_HEADS: &[&str] = &[
    "pas", "pwd", "sec", "tok", "api", "acc", "aut", "pri", "cli", "mas", "enc", "sig", "sha",
];

/// The kind a name says: `password` (passw(or)d, passphrase, pwd), `secret`, `token`,
/// `api-key` (api key), else `key` (access, auth, account, private, client, master,
/// encryption, signing, shared access key) — first of these the name holds.
pub fn kind_of_name(name: &str) -> SecretKind {
    let lower = name.to_ascii_lowercase();
    if lower.contains("passw") || lower.contains("passphrase") || lower.contains("pwd") {
        "password"
    } else if lower.contains("secret") {
        "secret"
    } else if lower.contains("token") {
        "token"
    } else if lower.contains("apikey") || lower.contains("api_key") || lower.contains("api-key") {
        "api-key"
    } else {
        "key"
    }
}

/// Whether `value` is a secret of `kind` (a kind [`kind_of_name`] gives): passwords 4+
/// characters, secrets 6+, not placeholders; tokens and keys 8+ with a digit, a letter and
/// 3+ bits of entropy per byte. Never a constant's name (`"DB_PASSWORD"`); after a bare
/// `name:` (a type annotation as often as a YAML value) a plain name needs a digit and must
/// not be snake case (`passwd: CString`, `secret: c_long` stay; `password: hunter2` goes).
pub fn named_value(kind: SecretKind, value: &str, typed: bool) -> bool {
    if is_constant_name(value) || (typed && is_plain_name(value) && !plain_name_secret(value)) {
        return false;
    }
    match kind {
        "password" => value.chars().count() >= 4 && not_placeholder(value),
        "secret" => value.chars().count() >= 6 && not_placeholder(value),
        _ => value.chars().count() >= 8 && token_value(value),
    }
}

/// Whether a multi-word value on a YAML-style line is a secret of `kind`.
pub fn named_line_value(kind: SecretKind, value: &str) -> bool {
    match kind {
        "password" | "secret" => line_value(value),
        _ => line_token_value(value),
    }
}

/// A key that starts with a fixed prefix: (kind, pattern, prefixes).
const PREFIXED: &[(SecretKind, &str, &[&str])] = &[
    (
        "anthropic-api-key",
        r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        &["sk-ant-"],
    ),
    (
        "openai-api-key",
        r"(?-u:\b)sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|(?-u:\b)sk-[A-Za-z0-9_-]{8,}T3BlbkFJ[A-Za-z0-9_-]{8,}",
        &["sk-proj-", "sk-svcacct-", "sk-admin-"],
    ),
    (
        "stripe-key",
        r"(?-u:\b)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|(?-u:\b)whsec_[A-Za-z0-9]{24,}",
        &["sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"],
    ),
    ("api-key", r"(?-u:\b)sk-[A-Za-z0-9]{20,}(?-u:\b)", &["sk-"]),
    (
        "google-api-key",
        r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
        &["AIza"],
    ),
    (
        "google-oauth",
        r"(?-u:\b)GOCSPX-[0-9A-Za-z_-]{28}|(?-u:\b)ya29\.[0-9A-Za-z_-]{20,}|(?-u:\b)1//0[0-9A-Za-z_-]{30,}",
        &["GOCSPX-", "ya29."],
    ),
    (
        "aws-access-key",
        r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?-u:\b)",
        &["AKIA", "ASIA"],
    ),
    (
        "github-token",
        r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{36,}|(?-u:\b)github_pat_[A-Za-z0-9_]{22,}",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    ),
    (
        "gitlab-token",
        r"(?-u:\b)gl(?:pat|ptt|dt|rt|cbt|oas|soat|ft|imt)-[A-Za-z0-9_-]{20,}",
        &["glpat-", "glptt-", "gldt-", "glrt-"],
    ),
    (
        "slack-token",
        r"(?-u:\b)xox[abposre]-[A-Za-z0-9-]{10,}|(?-u:\b)xapp-[0-9]-[A-Za-z0-9-]{10,}",
        &[
            "xoxb-", "xoxp-", "xoxa-", "xoxe-", "xoxs-", "xoxr-", "xoxo-", "xapp-",
        ],
    ),
    (
        "huggingface-token",
        r"(?-u:\b)hf_[A-Za-z0-9]{30,}",
        &["hf_"],
    ),
    (
        "npm-token",
        r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        &["npm_"],
    ),
    (
        "pypi-token",
        r"(?-u:\b)pypi-AgE[A-Za-z0-9_-]{50,}",
        &["pypi-AgE"],
    ),
    (
        "sendgrid-key",
        r"(?-u:\b)SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        &["SG."],
    ),
    (
        "vault-token",
        r"(?-u:\b)hv[sb]\.[A-Za-z0-9_-]{24,}",
        &["hvs.", "hvb."],
    ),
    (
        "digitalocean-token",
        r"(?-u:\b)do[opr]_v1_[a-f0-9]{64}",
        &["dop_v1_", "doo_v1_", "dor_v1_"],
    ),
    (
        "shopify-token",
        r"(?-u:\b)shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
    ),
    ("groq-api-key", r"(?-u:\b)gsk_[A-Za-z0-9]{48,}", &["gsk_"]),
    ("xai-api-key", r"(?-u:\b)xai-[A-Za-z0-9]{60,}", &["xai-"]),
    (
        "perplexity-api-key",
        r"(?-u:\b)pplx-[A-Za-z0-9]{40,}",
        &["pplx-"],
    ),
    ("replicate-token", r"(?-u:\b)r8_[A-Za-z0-9]{37,}", &["r8_"]),
    (
        "databricks-token",
        r"(?-u:\b)dapi[a-f0-9]{32}(?:-[0-9])?(?-u:\b)",
        &["dapi"],
    ),
    (
        "linear-api-key",
        r"(?-u:\b)lin_api_[A-Za-z0-9]{40}",
        &["lin_api_"],
    ),
    ("notion-token", r"(?-u:\b)ntn_[A-Za-z0-9]{40,}", &["ntn_"]),
    (
        "postman-api-key",
        r"(?-u:\b)PMAK-[a-f0-9]{24}-[a-f0-9]{34}",
        &["PMAK-"],
    ),
    (
        "age-secret-key",
        r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
        &["AGE-SECRET-KEY-1"],
    ),
    ("twilio-api-key", r"(?-u:\b)SK[0-9a-f]{32}(?-u:\b)", &[]),
    ("mailgun-key", r"(?-u:\b)key-[0-9a-f]{32}(?-u:\b)", &[]),
    (
        "square-token",
        r"(?-u:\b)sq0(?:atp|csp)-[0-9A-Za-z_-]{22,}",
        &["sq0atp-", "sq0csp-"],
    ),
    (
        "atlassian-token",
        r"(?-u:\b)ATATT3[A-Za-z0-9_=-]{50,}",
        &["ATATT3"],
    ),
    (
        "grafana-token",
        r"(?-u:\b)gl(?:sa|c)_[A-Za-z0-9_=+/-]{32,}",
        &["glsa_", "glc_"],
    ),
    (
        "sentry-token",
        r"(?-u:\b)sntry[su]_[A-Za-z0-9_=+/-]{40,}",
        &["sntrys_", "sntryu_"],
    ),
    ("newrelic-key", r"(?-u:\b)NRAK-[A-Z0-9]{27}", &["NRAK-"]),
    (
        "figma-token",
        r"(?-u:\b)figd_[A-Za-z0-9_-]{40,}",
        &["figd_"],
    ),
    ("supabase-token", r"(?-u:\b)sbp_[a-f0-9]{40}", &["sbp_"]),
    (
        "doppler-token",
        r"(?-u:\b)dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}",
        &["dp.pt.", "dp.st."],
    ),
    (
        "telegram-bot-token",
        r"(?-u:\b)[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?-u:\b)",
        &[],
    ),
    (
        "discord-bot-token",
        r"(?-u:\b)[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?-u:\b)",
        &[],
    ),
    (
        "jwt",
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        &["eyJ"],
    ),
];

/// Every rule, in priority order: when two findings overlap, the one that starts first
/// wins; on the same start, the earlier rule.
pub fn rule_sources() -> Vec<RuleSource> {
    let mut rules = vec![
        // A PEM block: the BEGIN line, then whole lines of base64 (16+ characters, or fewer
        // at a line's end: the last line is short) or armor headers, through the END line
        // when there is one. Greedy line by line, so a BEGIN without END costs one line.
        RuleSource {
            name: "pem private key",
            pattern: format!(
                r"-----BEGIN[A-Z0-9 ]{{0,40}} PRIVATE KEY(?: BLOCK)?-----(?:{BLOCK_GAP}(?:{BASE64_LINE}|[A-Za-z0-9+/=]{{1,15}}(?:\\r)?\\n|(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset|MessageID):[^\r\n\\]*))*(?:(?:{BLOCK_GAP})?-----END[A-Z0-9 ]{{0,40}} PRIVATE KEY(?: BLOCK)?-----)?"
            ),
            judge: Judge::Fixed("private-key", pem_has_body),
            probe: "-----BEGIN PRIVATE KEY-----\n",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // A PuTTY key file: its private lines and MAC (the public lines stay).
        RuleSource {
            name: "putty private key",
            pattern: format!(
                r"Private-Lines:[ \t]*[0-9]{{1,4}}((?:{BLOCK_GAP}(?:{BASE64_LINE}))+(?:{BLOCK_GAP}Private-(?:MAC|Hash):[ \t]*[0-9A-Fa-f]+)?)"
            ),
            judge: Judge::Fixed("putty-private-key", always),
            probe: "Private-Lines: 1\n",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
    ];
    for &(kind, pattern, prefixes) in PREFIXED {
        rules.push(RuleSource {
            name: kind,
            pattern: pattern.to_owned(),
            judge: Judge::Fixed(kind, always),
            probe: prefixes.first().copied().unwrap_or(match kind {
                "twilio-api-key" => "SK",
                "mailgun-key" => "key-",
                "discord-bot-token" => "MTA",
                _ => "123456789:AA",
            }),
            skip: match kind {
                "telegram-bot-token" => Skip::Near {
                    needle: ":AA",
                    back: 10,
                },
                _ => Skip::Prefix,
            },
            key_prefixes: prefixes,
        });
    }
    rules.extend([
        RuleSource {
            name: "slack webhook",
            pattern: r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{16,})"
                .into(),
            judge: Judge::Fixed("slack-webhook", always),
            probe: "https://hooks.slack.com/services/",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        RuleSource {
            name: "discord webhook",
            pattern: r"discord(?:app)?\.com/api/webhooks/([0-9]{5,}/[A-Za-z0-9_-]{20,})".into(),
            judge: Judge::Fixed("discord-webhook", always),
            probe: "https://discord.com/api/webhooks/",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        RuleSource {
            name: "bearer token",
            pattern: r"(?i)(?-u:\b)bearer[ \t]+([A-Za-z0-9._~+/-]{20,}=*)".into(),
            judge: Judge::Fixed("bearer-token", always),
            probe: "Bearer ",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // `Authorization: Basic dXNlcjpwYXNz`, `Token …`, `Digest …` (Bearer is above).
        RuleSource {
            name: "authorization header",
            pattern: r#"(?i)(?-u:\b)authorization["']?[ \t]*[:=][ \t]*["']?(?:basic|token|digest|apikey|api-key|key|sso-key|negotiate|ntlm)[ \t]+([A-Za-z0-9._~+/:-]{6,}=*)"#.into(),
            judge: Judge::Fixed("authorization", not_placeholder),
            probe: "Authorization: Basic ",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // `scheme://user:password@host`: the password runs to the last `@` before the host,
        // so it may hold `@`, `/` and `:` (bounded, 128 characters).
        RuleSource {
            name: "url password",
            pattern: r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@]{0,64}:([^\s]{1,128})@[A-Za-z0-9._~%-]+".into(),
            judge: Judge::Fixed("url-password", not_placeholder),
            probe: "postgres://user:",
            skip: Skip::Near {
                needle: "://",
                back: 21,
            },
            key_prefixes: &[],
        },
        // `.netrc`: `machine HOST login USER password PASS` (one line or several).
        RuleSource {
            name: "netrc password",
            pattern: r"(?i)(?-u:\b)(?:machine[ \t]+[^\s]+|default)(?:\s+(?:login|account|port)[ \t]+[^\s]+)+\s+password[ \t]+([^\s]+)|(?i)(?-u:\b)machine[ \t]+[^\s]+\s+password[ \t]+([^\s]+)\s+login(?-u:\b)".into(),
            judge: Judge::Fixed("password", not_placeholder),
            probe: "machine ",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // `.pgpass`: `host:port:database:user:password`.
        RuleSource {
            name: "pgpass password",
            pattern: r"(?m)^[^:\s#][^:\s]*:(?:[0-9]{1,5}|\*):[^:\s]+:[^:\s]+:([^\s]+)\r?$".into(),
            judge: Judge::Fixed("password", not_placeholder),
            probe: "db:5432:app:me:",
            skip: Skip::LineWith(b':'),
            key_prefixes: &[],
        },
        // `mysql … -pSECRET` (the value joined to `-p`; `-p VALUE` asks for it instead).
        RuleSource {
            name: "mysql -p",
            pattern: r#"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mysqlsh|mariadb|mariadb-dump)(?-u:\b)[^\r\n]*?[ \t]-p(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"'-][^\s]*))"#.into(),
            judge: Judge::Fixed("password", not_placeholder),
            probe: "mysql ",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // `curl -u user:pass`, `--user user:pass`.
        RuleSource {
            name: "curl -u",
            pattern: r#"(?-u:\b)curl(?-u:\b)[^\r\n]*?[ \t](?:-u|--user)(?:[ \t]+|=)?(?:"[^":\r\n]*:([^"\r\n]+)"|'[^':\r\n]*:([^'\r\n]+)'|[^\s:"']+:([^\s"']+))"#.into(),
            judge: Judge::Fixed("password", not_placeholder),
            probe: "curl -u ",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // `sshpass -p PASS`, `docker login -p PASS` / `--password PASS`.
        RuleSource {
            name: "login -p",
            pattern: r#"(?-u:\b)sshpass[ \t]+-p[ \t]*(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"']+))|(?-u:\b)(?:docker|podman|nerdctl|helm)[ \t]+(?:registry[ \t]+)?login(?-u:\b)[^\r\n]*?[ \t](?:-p|--password)(?:[ \t]+|=)(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"'-][^\s]*))"#.into(),
            judge: Judge::Fixed("password", not_placeholder),
            probe: "sshpass -p ",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // requests' `auth=("user", "pass")`.
        RuleSource {
            name: "auth tuple",
            pattern: r#"(?-u:\b)(?:auth|HTTPBasicAuth|HTTPDigestAuth|BasicAuth)[ \t]*(?:=[ \t]*)?\([ \t]*["'][^"'\r\n]*["'][ \t]*,[ \t]*["']([^"'\r\n]+)["']"#.into(),
            judge: Judge::Fixed("password", not_placeholder),
            probe: "auth=(",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // docker's `config.json`: `"auth": "dXNlcjpwYXNz"`.
        RuleSource {
            name: "docker auth",
            pattern: r#""auth"[ \t]*:[ \t]*"([A-Za-z0-9+/]{4,}={0,2})""#.into(),
            judge: Judge::Fixed("docker-auth", always),
            probe: "\"auth\": \"",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // `Cookie: session=…` / `Set-Cookie:` (a logged-in session is a credential).
        RuleSource {
            name: "cookie header",
            pattern: r#"(?i)(?-u:\b)(?:set-)?cookie[ \t]*:[ \t]*([^\r\n"']{8,})"#.into(),
            judge: Judge::Fixed("cookie", cookie_value),
            probe: "Cookie: ",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // Azure SAS signatures in URLs.
        RuleSource {
            name: "sas signature",
            pattern: r"[?&]sig=([A-Za-z0-9%+/=]{30,})".into(),
            judge: Judge::Fixed("sas-signature", always),
            probe: "?sig=",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // `password: correct horse battery staple` on a YAML-style line: the rest of the line
        // (a trailing ` # comment` left), when it is several words.
        RuleSource {
            name: "named line value",
            pattern: format!(
                r#"(?im)^[ \t]*(?:-[ \t]+)?["']?[a-z0-9_.-]*{NAME}[a-z0-9_.-]*["']?[ \t]*:[ \t]+([^\s"'#|>&*!{{\[][^\r\n]*?)[ \t]*(?:[ \t]#[^\r\n]*)?\r?$"#
            ),
            judge: Judge::ByName { line: true },
            probe: "password: ",
            skip: Skip::LineWith(b':'),
            key_prefixes: &[],
        },
        // `name = value`, `name: "value"`, `name := value`, `name => value` where the name
        // says password, secret, token or key.
        RuleSource {
            name: "named value",
            pattern: format!(
                r#"(?i){NAME}[a-z0-9_.-]*["']?[ \t]*(?:=>|:=|[=:])[ \t]*(?:"([^"\r\n]{{4,}})"|'([^'\r\n]{{4,}})'|([^\s"'`,;)}}\]:=][^\s"'`,;)}}\]]{{3,}}))"#
            ),
            judge: Judge::ByName { line: false },
            probe: "password=",
            skip: Skip::Words(NAME_HEADS),
            key_prefixes: &[],
        },
        // `--password VALUE`, `--token VALUE` on a command line.
        RuleSource {
            name: "named flag",
            pattern: r#"--(?:password|passwd|pass|secret|client-secret|token|access-token|auth-token|api-key|apikey)[ \t]+(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"'-][^\s]*))"#.into(),
            judge: Judge::ByName { line: false },
            probe: "--password ",
            skip: Skip::Prefix,
            key_prefixes: &[],
        },
        // A `.env` line whose name says key, secret, token, password, auth, salt: any value
        // with a digit and a letter (hex keys of any length included).
        RuleSource {
            name: "named env value",
            pattern: r#"(?m)^[ \t]*(?:export[ \t]+)?(?i:[a-z0-9_]*(?:key|secret|token|pass|pwd|auth|credential|salt|signature|cookie)[a-z0-9_]*)[ \t]*=[ \t]*["']?([^\s"']{8,})["']?[ \t]*\r?$"#.into(),
            judge: Judge::Fixed("env-value", named_env_value),
            probe: "API_KEY=",
            skip: Skip::LineWith(b'='),
            key_prefixes: &[],
        },
        // Any `.env` line (an upper-case name, as `.env` files write them) whose value is long
        // and random-looking.
        RuleSource {
            name: "env value",
            pattern: r#"(?m)^[ \t]*(?:export[ \t]+)?[A-Z_][A-Z0-9_]*[ \t]*=[ \t]*["']?([^\s"']{16,})["']?[ \t]*\r?$"#.into(),
            judge: Judge::Fixed("env-value", high_entropy),
            probe: "X=",
            skip: Skip::LineWith(b'='),
            key_prefixes: &[],
        },
    ]);
    rules
}

/// A PEM match that holds more than its BEGIN line (a body line or an END line): a BEGIN
/// line alone, as code and docs quote it, holds no key.
fn pem_has_body(block: &str) -> bool {
    block
        .split_once("-----")
        .and_then(|(_, rest)| rest.split_once("-----"))
        .is_some_and(|(_, body)| !body.is_empty())
}

/// A cookie header's value: `name=value` pairs, one of them token-like.
fn cookie_value(value: &str) -> bool {
    value.split(';').any(|pair| {
        pair.split_once('=')
            .is_some_and(|(_, v)| v.trim().len() >= 8 && token_value(v.trim()))
    })
}
