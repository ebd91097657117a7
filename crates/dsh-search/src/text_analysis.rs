//! How text becomes search terms, for the index and for queries alike: Latin-script words
//! lowercased and ASCII-folded (`Élan` → `elan`), CJK runs cut into overlapping bigrams so
//! any two or more consecutive characters are found, everything else a separator.

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, TextAnalyzer, Token, TokenStream, Tokenizer,
};

/// Name the analyzer is registered under in every opened index.
pub const ANALYZER: &str = "dsh_words";

/// Longest term kept (bytes, after folding); longer runs (hashes, base64) are not searchable.
const MAX_TERM_BYTES: usize = 64;

/// The analyzer used for every text field and every query word.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(WordsAndBigrams::default())
        .filter(AsciiFoldingFilter)
        .filter(LowerCaser)
        .filter(RemoveLongFilter::limit(MAX_TERM_BYTES))
        .build()
}

/// One analyzed term with where it came from in the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub text: String,
    pub position: usize,
    /// Byte range in the analyzed text.
    pub start: usize,
    pub end: usize,
}

/// Analyze `text` into terms (positions count from 0).
pub fn terms(analyzer: &mut TextAnalyzer, text: &str) -> Vec<Term> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while let Some(t) = stream.next() {
        out.push(Term {
            text: t.text.clone(),
            position: t.position,
            start: t.offset_from,
            end: t.offset_to,
        });
    }
    out
}

/// Whether `c` is written without spaces between words (Han, kana, Hangul), so it is
/// indexed by character bigrams instead of by words.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF      // CJK radicals, Kangxi radicals
        | 0x3005..=0x3007    // 々 〆 〇
        | 0x3021..=0x3029    // Hangzhou numerals
        | 0x3031..=0x3035    // kana repeat marks
        | 0x3040..=0x30FF    // Hiragana, Katakana
        | 0x3100..=0x312F    // Bopomofo
        | 0x3130..=0x318F    // Hangul compatibility jamo
        | 0x31A0..=0x31FF    // Bopomofo ext., Katakana phonetic ext.
        | 0x3400..=0x4DBF    // CJK ext. A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xA960..=0xA97F    // Hangul jamo ext. A
        | 0xAC00..=0xD7FF    // Hangul syllables, jamo ext. B
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x20000..=0x3FFFF  // CJK ext. B and later planes
    )
}

/// Splits text into words (runs of alphanumerics outside CJK) and CJK bigrams (a lone CJK
/// character is a term of its own).
#[derive(Clone, Default)]
pub struct WordsAndBigrams {
    token: Token,
}

impl Tokenizer for WordsAndBigrams {
    type TokenStream<'a> = WordsAndBigramsStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordsAndBigramsStream<'a> {
        self.token.reset();
        WordsAndBigramsStream {
            text,
            at: 0,
            token: &mut self.token,
        }
    }
}

/// The token stream of [`WordsAndBigrams`].
pub struct WordsAndBigramsStream<'a> {
    text: &'a str,
    /// Byte offset where scanning continues.
    at: usize,
    token: &'a mut Token,
}

impl WordsAndBigramsStream<'_> {
    fn emit(&mut self, from: usize, to: usize) -> bool {
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.token.position.wrapping_add(1);
        self.token.position_length = 1;
        true
    }
}

impl TokenStream for WordsAndBigramsStream<'_> {
    fn advance(&mut self) -> bool {
        let rest = &self.text[self.at..];
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            let from = self.at + i;
            if is_cjk(c) {
                let first_end = from + c.len_utf8();
                // A bigram with the next character when it is CJK too; the next token
                // starts at that character, so bigrams overlap.
                return match chars.next() {
                    Some((_, d)) if is_cjk(d) => {
                        let pair_end = first_end + d.len_utf8();
                        // A run's last bigram is followed by a non-CJK char or the end:
                        // continue from the second char only while the run goes on.
                        let next_is_cjk = self.text[pair_end..].chars().next().is_some_and(is_cjk);
                        self.at = if next_is_cjk { first_end } else { pair_end };
                        self.emit(from, pair_end)
                    }
                    _ => {
                        // A lone CJK character (a run of one: a longer run's last
                        // character was already covered by its final bigram).
                        self.at = first_end;
                        self.emit(from, first_end)
                    }
                };
            }
            if c.is_alphanumeric() {
                let mut to = from + c.len_utf8();
                for (j, d) in chars.by_ref() {
                    if d.is_alphanumeric() && !is_cjk(d) {
                        to = self.at + j + d.len_utf8();
                    } else {
                        break;
                    }
                }
                self.at = to;
                return self.emit(from, to);
            }
        }
        self.at = self.text.len();
        false
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn texts(text: &str) -> Vec<String> {
        terms(&mut analyzer(), text)
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn tokenization_table() {
        let cases: &[(&str, &[&str])] = &[
            ("Hello, World!", &["hello", "world"]),
            (
                "Élan CAFÉ naïve Straße",
                &["elan", "cafe", "naive", "strasse"],
            ),
            ("Kafka over Redis", &["kafka", "over", "redis"]),
            ("结账", &["结账"]),
            ("结账页面", &["结账", "账页", "页面"]),
            ("中", &["中"]),
            ("Kafka结账x", &["kafka", "结账", "x"]),
            ("の a 中文 b", &["の", "a", "中文", "b"]),
            ("カタカナ", &["カタ", "タカ", "カナ"]),
            ("한국어", &["한국", "국어"]),
            ("e-mail foo_bar", &["e", "mail", "foo", "bar"]),
            ("\u{1b}[31mred\u{202e}evil<b>", &["31mred", "evil", "b"]),
            ("Привет МИР", &["привет", "мир"]),
            ("", &[]),
            ("  ... ", &[]),
        ];
        for (text, want) in cases {
            assert_eq!(texts(text), *want, "{text:?}");
        }
    }

    #[test]
    fn offsets_point_into_the_original_text() {
        let text = "Ça 结账页 Ünïcode";
        for t in terms(&mut analyzer(), text) {
            assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
            let original = &text[t.start..t.end];
            assert!(!original.is_empty(), "{t:?}");
        }
        let got: Vec<(usize, &str)> = terms(&mut analyzer(), text)
            .iter()
            .map(|t| (t.position, &text[t.start..t.end]))
            .collect();
        assert_eq!(
            got,
            vec![(0, "Ça"), (1, "结账"), (2, "账页"), (3, "Ünïcode")]
        );
    }

    #[test]
    fn long_runs_are_dropped() {
        let long = "a".repeat(100);
        assert_eq!(texts(&format!("x {long} y")), vec!["x", "y"]);
    }
}
