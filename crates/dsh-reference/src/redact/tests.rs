//! The rules' table tests: each kind, the shapes people paste, the near misses that stay,
//! labels, and the linearity of every rule.

use super::*;
use std::fmt::Write as _;

#[test]
fn every_rule_compiles_for_the_counted_dfa() {
    let sources = rule_sources();
    for source in &sources {
        if let Err(e) = CountedRegex::new(&source.pattern, source.skip) {
            panic!("{}: {e}", source.name);
        }
    }
    assert_eq!(RULES.len(), sources.len());
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

/// `input` redacted is exactly `want`, with one secret of `kind` counted.
fn assert_redacts(input: &str, want: &str, kind: &str) {
    let (got, counts) = redact(input);
    assert_eq!(got, want, "{input:?}");
    assert_eq!(counts.by_kind.get(kind), Some(&1), "{input:?}: {counts:?}");
    assert_eq!(counts.total(), 1, "{input:?}: {counts:?}");
}

/// One test per shape the attack pass of issue 34 sent through to the model: each failed on
/// the commit before the rules that cover it. Keys are assembled at run time so no scanner
/// flags this file.
macro_rules! pasted {
    ($($name:ident: $input:expr => $want:expr, $kind:expr;)*) => {
        mod pasted {
            use super::*;
            $(
                #[test]
                fn $name() {
                    let input: String = $input;
                    let want: String = $want;
                    assert_redacts(&input, &want, $kind);
                }
            )*
        }
    };
}

/// 64 base64 characters: one full PEM line.
fn pem_line() -> String {
    fake("MIIE", "vQIBADANBgkqhkiG", 4)[..64].to_owned()
}

pasted! {
    // The documented placeholder rule, exactly: only the listed forms stay.
    placeholder_rule_star: "password=*Xk9!mQ2".into() => "password=[redacted: password]".into(), "password";
    placeholder_rule_percent: "password=%Tq8zL1w".into() => "password=[redacted: password]".into(), "password";
    placeholder_rule_dollar: "password=$abc!".into() => "password=[redacted: password]".into(), "password";
    netrc_one_line: format!("machine api.example.com login alice password {}", fake("Hu", "nter2-n", 2))
        => "machine api.example.com login alice password [redacted: password]".into(), "password";
    netrc_lines: format!("machine git.example.com\n  login alice\n  password {}\n", fake("Hu", "nter2-n", 2))
        => "machine git.example.com\n  login alice\n  password [redacted: password]\n".into(), "password";
    yaml_value_with_spaces: "db:\n  host: db.internal\n  password: correct horse battery staple\n".into()
        => "db:\n  host: db.internal\n  password: [redacted: password]\n".into(), "password";
    authorization_basic: format!("Authorization: Basic {}", fake("dXNl", "cjpwYXNzd29yZA", 1))
        => "Authorization: Basic [redacted: authorization]".into(), "authorization";
    docker_auth: format!(r#"{{"auths":{{"ghcr.io":{{"auth":"{}"}}}}}}"#, fake("dXNl", "cjpnaHBfc2VjcmV0", 1))
        => r#"{"auths":{"ghcr.io":{"auth":"[redacted: docker-auth]"}}}"#.into(), "docker-auth";
    kube_client_key_data: format!("    client-key-data: {}", fake("LS0t", "LS1CRUdJTiBSU0EgUFJJVkFURSBLRVk", 3))
        => "    client-key-data: [redacted: key]".into(), "key";
    pgpass: format!("db.internal:5432:app:deploy:{}", fake("S3", "cr3t-pg", 2))
        => "db.internal:5432:app:deploy:[redacted: password]".into(), "password";
    mysql_p: format!("mysql -u root -p{} -h db app", fake("S3", "cr3tPass", 1))
        => "mysql -u root -p[redacted: password] -h db app".into(), "password";
    curl_u: format!("curl -u alice:{} https://api.example.com/v1", fake("S3", "cr3tPass", 1))
        => "curl -u alice:[redacted: password] https://api.example.com/v1".into(), "password";
    slack_webhook: format!("https://hooks.slack.com/services/{}", fake("T0123ABCD/B0123ABCD/", "abcdefghijkl", 2))
        => "https://hooks.slack.com/services/[redacted: slack-webhook]".into(), "slack-webhook";
    discord_webhook: format!("https://discord.com/api/webhooks/{}", fake("123456789012345678/", "AbCdEfGhIjKl", 3))
        => "https://discord.com/api/webhooks/[redacted: discord-webhook]".into(), "discord-webhook";
    hex_key_in_env_named_key: format!("ENCRYPTION_KEY={}\n", fake("", "9f86d081884c7d65", 4))
        => "ENCRYPTION_KEY=[redacted: key]\n".into(), "key";
    hex_key_in_env_any_key_name: format!("export APP_KEY={}\n", fake("", "3f5d17c0a9b1e2d3c4b5a6978899001a", 2)[..40].to_owned())
        => "export APP_KEY=[redacted: env-value]\n".into(), "env-value";
    putty_key: format!(
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIOnv\nAAAA\nPrivate-Lines: 1\n{}\nPrivate-MAC: {}\n",
        fake("AAAAIG", "VxYW1wbGUtcHJp", 3), fake("", "0123456789abcdef", 4))
        => "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIOnv\nAAAA\nPrivate-Lines: 1[redacted: putty-private-key]\n".into(), "putty-private-key";
    short_final_pem_line: format!("key:\n-----BEGIN PRIVATE KEY-----\n{}\n{}\nQUJD\n\nthanks!", pem_line(), pem_line())
        => "key:\n[redacted: private-key]\n\nthanks!".into(), "private-key";
    short_final_pem_line_in_json: format!(r#"{{"private_key": "-----BEGIN PRIVATE KEY-----\n{}\nabc==\n-----END PRIVATE KEY-----\n"}}"#, pem_line())
        => r#"{"private_key": "[redacted: private-key]\n"}"#.into(), "private-key";
    url_password_with_at_and_slash: "postgres://app:p@ss/w0rd@db.internal:5432/app".into()
        => "postgres://app:[redacted: url-password]@db.internal:5432/app".into(), "url-password";
    url_password_without_user: "redis://:S3cr3t-redis@cache:6379/0".into()
        => "redis://:[redacted: url-password]@cache:6379/0".into(), "url-password";
    zero_width_space_inside_a_key: format!("key {}\u{200B}{} end", fake("sk-ant-api03-", "aB3x", 6), fake("", "Zq9w", 6))
        => "key [redacted: anthropic-api-key] end".into(), "anthropic-api-key";
    soft_hyphen_inside_a_key: format!("{}\u{00AD}{}", fake("ghp_", "A1b2C3d4E5f6", 2), fake("", "Z9y8X7w6V5u4", 1))
        => "[redacted: github-token]".into(), "github-token";
    sshpass_p: format!("sshpass -p '{}' ssh me@host", fake("S3", "cr3t!x", 1))
        => "sshpass -p '[redacted: password]' ssh me@host".into(), "password";
    docker_login_p: format!("docker login -u me -p {} ghcr.io", fake("S3", "cr3tPass", 1))
        => "docker login -u me -p [redacted: password] ghcr.io".into(), "password";
    password_flag: format!("rabbitmqadmin --username admin --password {} list queues", fake("S3", "cr3tPass", 1))
        => "rabbitmqadmin --username admin --password [redacted: password] list queues".into(), "password";
    cookie_header: format!("Cookie: sessionid={}; theme=dark", fake("8f14e45f", "ceea167a5a36", 2))
        => "Cookie: [redacted: cookie]".into(), "cookie";
    requests_auth_tuple: format!(r#"requests.get(url, auth=("alice", "{}"))"#, fake("S3", "cr3tPass", 1))
        => r#"requests.get(url, auth=("alice", "[redacted: password]"))"#.into(), "password";
    azure_account_key: format!("use DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={}==;EndpointSuffix=core.windows.net for storage", fake("Eby8", "vdM02xNOcqFlqUwJPLlmEtlCDXJ1", 3))
        => "use DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[redacted: key];EndpointSuffix=core.windows.net for storage".into(), "key";
    telegram_bot_token: format!("bot {} ok", fake("123456789:AA", "Hk3mZq9wLp2", 3))
        => "bot [redacted: telegram-bot-token] ok".into(), "telegram-bot-token";
    sendgrid_key: format!("{}.{}", fake("SG.", "aB3dE6gH9jK2", 2)[..25].to_owned(), fake("", "mN5pQ8rS1tU4vW7x", 3)[..43].to_owned())
        => "[redacted: sendgrid-key]".into(), "sendgrid-key";
    vault_token: format!("VAULT_TOKEN is {}", fake("hvs.", "CAESIJmZ2x9", 3))
        => "VAULT_TOKEN is [redacted: vault-token]".into(), "vault-token";
}

#[test]
fn pasted_near_misses_stay() {
    let cases = [
        "the default password is shown in the settings",
        "a machine learning password reset flow",
        "mysql -u root -p mydb",
        "mysql -u root -p",
        "curl -u $USER:$PASS https://example.com",
        "Authorization: Bearer ${TOKEN}",
        "password: ${DB_PASSWORD}",
        "password: {{ vault_password }}",
        "let password = prompt_password()?;",
        "Authorization: Basic <credentials>",
        "cookie: chocolate chip",
        "docker login ghcr.io",
        "sshpass -p \"$PASS\" ssh host",
        "https://hooks.slack.com/services/",
        "10:30:45 started",
        "a:1:b:c:",
        "zero\u{200B}width in plain prose",
        "The password is shown in the settings page.",
        "token: see the settings page",
    ];
    for input in cases {
        let (got, counts) = redact(input);
        assert_eq!(got, input, "{input:?} -> {counts:?}");
    }
}

/// A label or displayed title that ends in a key cut short (a fallback title is cut to 40
/// bytes) loses that key too; text elsewhere keeps a key prefix that ends it.
#[test]
fn a_label_ending_in_a_cut_key_is_redacted() {
    let title = format!("Deploy with {}", fake("sk-ant-api03-", "AbCd", 1));
    assert_eq!(title.len(), 29);
    let (redacted, counts) = redact_label(&title);
    assert_eq!(redacted, "Deploy with [redacted: anthropic-api-key]");
    assert_eq!(counts.total(), 1);
    // Mid-label the rules decide alone; plain text keeps what no rule finds.
    assert_eq!(redact_label("use sk-ant- keys").0, "use sk-ant- keys");
    assert_eq!(redact(&title).0, title, "redact alone keeps a short key");
    assert_eq!(
        display_title(&title, true),
        "Deploy with [redacted: anthropic-api-key]"
    );
    assert_eq!(display_title(&title, false), title);
    let full = format!("try {} now", fake("ghp_", "A1b2C3d4E5f6", 3));
    assert_eq!(
        display_title(&full, true),
        "try [redacted: github-token] now"
    );
}

/// Each rule alone on `text`: the bytes the regex engine read, and how many secrets.
fn rule_cost(rule: &Rule, text: &str) -> (usize, usize) {
    let mut cache = rule.regex.cache();
    let mut cost = ScanCost::default();
    let mut found = 0;
    search_rule(rule, &mut cache, text, &mut cost, &mut |_, _, _| found += 1);
    (cost.engine_bytes, found)
}

/// `probe` repeated, joined by `sep`, to `n` bytes.
fn repeated(probe: &str, sep: &str, n: usize) -> String {
    let unit = format!("{probe}{sep}");
    let mut text = unit.repeat(n / unit.len() + 1);
    let mut end = n.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

/// Bytes the engine may read per byte of text, for any rule on any text: the DFA's pass,
/// the spans handed to the group search, and a bounded look past each match.
const BYTES_PER_BYTE: usize = 4;

/// Issue 34 item 1: every rule fed its own prefix repeated (100 KB and 1 MB; back to back,
/// one per line, and space-separated) reads at most a constant number of bytes per byte. On
/// the commit before, the PEM rule read each BEGIN line's rest of the text (quadratic).
#[test]
#[allow(clippy::cast_precision_loss)] // a ratio printed in the report
fn every_rule_reads_its_own_prefix_repeated_in_linear_time() {
    let mut report = String::new();
    let mut worst = Vec::new();
    for rule in RULES.iter() {
        for (sep, sizes) in [
            ("", &[100_000, 1_000_000][..]),
            ("\n", &[100_000, 1_000_000][..]),
            (" ", &[100_000][..]),
        ] {
            for &n in sizes {
                let text = repeated(rule.source.probe, sep, n);
                let (read, found) = rule_cost(rule, &text);
                let _ = writeln!(
                    report,
                    "{:<24} sep {sep:?} {n:>8} B: read {read:>9} ({:.2}/B), {found} found",
                    rule.source.name,
                    read as f64 / n as f64
                );
                if read > BYTES_PER_BYTE * n {
                    worst.push(format!("{} sep {sep:?} at {n}: {read}", rule.source.name));
                }
            }
        }
    }
    if std::env::var_os("REDACT_REPORT").is_some() {
        eprintln!("{report}");
    }
    assert!(
        worst.is_empty(),
        "rules reading more than linear: {worst:?}\n{report}"
    );
}

/// The attack file: BEGIN lines with no END. The whole redactor reads it in time linear in
/// its size; a BEGIN line alone holds no key, so nothing is redacted — and a body after the
/// last one is.
#[test]
fn a_file_of_begin_lines_without_end_is_read_in_linear_time() {
    let line = "-----BEGIN PRIVATE KEY-----\n";
    let rules = RULES.len();
    for lines in [4_000, 32_000] {
        let mut text = line.repeat(lines);
        let (findings, cost) = find_secrets_counted(&text);
        assert!(findings.is_empty(), "{findings:?}");
        assert!(
            cost.engine_bytes <= BYTES_PER_BYTE * rules * text.len(),
            "{lines} lines: {} bytes read for {}",
            cost.engine_bytes,
            text.len()
        );
        text.push_str(&pem_line());
        let (redacted, counts) = redact(&text);
        assert_eq!(counts.total(), 1);
        assert!(
            redacted.ends_with("-----\n[redacted: private-key]"),
            "{}",
            &redacted[redacted.len() - 60..]
        );
    }
}

/// Adversarial texts beyond the probes: many short matches on one line, long runs of key
/// characters, URL-like tokens without an `@`.
#[test]
fn hostile_texts_are_read_in_linear_time() {
    let n = 200_000;
    let texts = [
        repeated("password=abcd ", "", n),
        repeated("sk-", "", n),
        repeated("a", "", n),
        repeated("x://u:p", "", n),
        repeated("machine h login l ", "", n),
        repeated("curl -u ", "", n),
        repeated("mysql -u ", "", n),
        repeated("Private-Lines: 1\nQUJD", "\n", n),
        repeated("-----BEGIN RSA PRIVATE KEY-----\\nQUJD", "\\n", n),
        repeated("token: a b c", "\n", n),
        repeated("eyJhbGciOiJIUzI1.eyJ", "", n),
    ];
    for text in &texts {
        for rule in RULES.iter() {
            let (read, _) = rule_cost(rule, text);
            assert!(
                read <= BYTES_PER_BYTE * text.len(),
                "{} on {:?}…: {read} bytes for {}",
                rule.source.name,
                text.get(..40).unwrap_or_default(),
                text.len()
            );
        }
    }
}

/// Ordinary source code the comparison with the catalogue found flagged (Rust from the crate
/// registry): none of it is a secret.
#[test]
fn code_near_misses_stay() {
    let cases = [
        "    Halt = c::LINUX_REBOOT_CMD_HALT,",
        "        link_name = \"tcgetattr@GLIBC_2.2\"",
        "pub const SYS_memfd_secret: c_long = 447;",
        "pub const IFLA_INET6_TOKEN: _bindgen_ty_7 = 7;",
        "    server_handshake_traffic_secret: OkmBlock,",
        "        pub pw_passwd: *mut c_char,",
        "    pub fn basic_auth<U, P>(self, username: U, password: Option<P>)",
        "        or2_token: node.or2_token,",
        "    let tokens = quote!(..100u32);",
        "        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der));",
        "            SecretKind::ServerHandshakeTrafficSecret,",
        "    ClientEarlyTrafficSecret => \"CLIENT_EARLY_TRAFFIC_SECRET\",",
        "    let shared_secret = our_key_share.agree(peer);",
        "    let shared_secret = our_key_share\n        .agree(peer);",
        "        let secrets = ExtractedSecrets {",
        "        ExtendedMasterSecret => 0x0017,",
        "        let secret = [0x42u8; 32];",
        "        let mut pwd_verification_value = vec![0; 2];",
        "        let pwd = unsafe { libc::getpwuid(uid) };",
        "    InvalidToken::to_compile_error2(span)",
        "r\"-----BEGIN PRIVATE KEY-----\"",
        "    WBEM_E_MARSHAL_INVALID_SIGNATURE = 0x80041041,",
        "    D3D11_SHADER_TRACKING_OPTION_ALL_HAZARDS = D3D11_SHADER_TRACKING_OPTION_TRACK_RAW",
        "        Token: PULONG64,",
        "pub const NetValidateAuthentication: NET_VALIDATE_PASSWORD_TYPE = 1i32;",
    ];
    for input in cases {
        let (got, counts) = redact(input);
        assert_eq!(got, input, "{input:?} -> {counts:?}");
    }
}
