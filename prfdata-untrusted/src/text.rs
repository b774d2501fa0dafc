//! Text from elsewhere shown to a person: control characters made visible instead of obeyed.
//!
//! A name, an instance name, a text counter or a remote's answer may carry terminal control
//! sequences (ECMA-48): `ESC ] 0 ; title BEL` retitles the window, `ESC [ 2 J` clears the
//! screen, the one-byte C1 `CSI` (U+009B) starts a sequence on terminals that take 8-bit
//! controls, and `DEL` or backspaces overwrite what was printed. Printed raw, such text
//! acts on the terminal of whoever reads it (root's, for `prfmon query --host-user`).
//! [`escape_controls`] is the one place that decides what is a control character
//! ([`is_control`]: C0 but newline and tab, DEL, C1) and how it is shown ([`Style`]): it is
//! for whole lines and documents, whose own newlines and tabs are their layout.
//! [`escape_field`] escapes every control character, newline and tab too: for one field (a
//! name, an instance name, a text counter) set into a line, where a newline would start a
//! line the field's author wrote (`w1\nFAKE 999` forging a row of a table).
//!
//! # Examples
//!
//! ```
//! use prfdata_untrusted::text::{escape_controls, escape_field, Style};
//!
//! let title = "\u{1b}]0;pwned\u{7}name\u{9b}2J";
//! assert_eq!(escape_controls(title, Style::Terminal), r"\x1b]0;pwned\x07name\u{9b}2J");
//! assert_eq!(escape_controls(title, Style::Json), r"\u001b]0;pwned\u0007name\u009b2J");
//! assert_eq!(escape_controls("a\tb\nc", Style::Terminal), "a\tb\nc");
//! assert_eq!(escape_field("w1\nFAKE\t999", Style::Terminal), r"w1\x0aFAKE\x09999");
//! ```

use std::borrow::Cow;
use std::fmt::Write;

/// How an escaped control character is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// For people: `\x1b` for C0 and DEL, `\u{9b}` for C1, as Rust writes them.
    Terminal,
    /// Inside JSON text: `\u001b`, `\u009b`, the escapes JSON defines (RFC 8259, section 7),
    /// so the JSON stays valid and reads back as the same string.
    Json,
}

/// Whether `c` is a control character that [`escape_controls`] escapes: C0 (U+0000–U+001F)
/// but newline and tab, DEL (U+007F) and C1 (U+0080–U+009F).
///
/// # Examples
///
/// ```
/// use prfdata_untrusted::text::is_control;
/// assert!(is_control('\u{1b}') && is_control('\u{7f}') && is_control('\u{9b}') && is_control('\r'));
/// assert!(!is_control('\n') && !is_control('\t') && !is_control('é') && !is_control('\u{a0}'));
/// ```
pub fn is_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `text` with every control character ([`is_control`]) replaced by its escape in `style`;
/// borrowed when there is none.
///
/// # Examples
///
/// See the [module docs](self).
pub fn escape_controls(text: &str, style: Style) -> Cow<'_, str> {
    escape_where(text, style, is_control)
}

/// `text` with every control character, newline and tab included (`char::is_control`: C0,
/// DEL, C1), replaced by its escape in `style`: for a field set into a line (see the
/// [module docs](self)); borrowed when there is none.
///
/// # Examples
///
/// See the [module docs](self).
pub fn escape_field(text: &str, style: Style) -> Cow<'_, str> {
    escape_where(text, style, char::is_control)
}

/// `text` with the characters `escaped` picks (control characters only) replaced by their
/// escapes in `style`.
fn escape_where(text: &str, style: Style, escaped: fn(char) -> bool) -> Cow<'_, str> {
    let Some(first) = text.find(escaped) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if !escaped(c) {
            out.push(c);
            continue;
        }
        let code = u32::from(c);
        // Writing to a String cannot fail.
        let _ = match (style, code) {
            (Style::Terminal, 0..=0x7f) => write!(out, "\\x{code:02x}"),
            (Style::Terminal, _) => write!(out, "\\u{{{code:x}}}"),
            (Style::Json, _) => write!(out, "\\u{code:04x}"),
        };
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_character_is_escaped_and_nothing_else() {
        for code in 0..=0x10ffffu32 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            let text = c.to_string();
            let escaped = escape_controls(&text, Style::Terminal);
            let control = code < 0x20 && c != '\n' && c != '\t' || (0x7f..=0x9f).contains(&code);
            assert_eq!(escaped != text, control, "U+{code:04X}: {escaped}");
            assert!(!escaped.chars().any(is_control), "U+{code:04X}");
            let json = escape_controls(&text, Style::Json);
            assert!(!json.chars().any(is_control), "U+{code:04X}");
        }
    }

    #[test]
    fn a_field_has_its_newlines_and_tabs_escaped_too() {
        let text = "w1\nFAKE\t999\r\u{1b}é";
        assert_eq!(
            escape_field(text, Style::Terminal),
            r"w1\x0aFAKE\x09999\x0d\x1bé"
        );
        assert_eq!(
            escape_field(text, Style::Json),
            r"w1\u000aFAKE\u0009999\u000d\u001bé"
        );
        assert!(matches!(
            escape_field("plain", Style::Terminal),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn json_escapes_read_back_as_the_same_text() {
        let text = "a\u{1b}[2J\u{9b}\u{7f}é";
        let quoted = format!("\"{}\"", escape_controls(text, Style::Json));
        let back: String = unescape_json(&quoted);
        assert_eq!(back, text);
    }

    /// Reads the `\uXXXX` escapes back (this crate has no JSON parser; these are the only
    /// escapes the test's text has).
    fn unescape_json(quoted: &str) -> String {
        let inner = &quoted[1..quoted.len() - 1];
        let mut out = String::new();
        let mut rest = inner;
        while let Some(at) = rest.find("\\u") {
            out.push_str(&rest[..at]);
            let code = u32::from_str_radix(&rest[at + 2..at + 6], 16).unwrap();
            out.push(char::from_u32(code).unwrap());
            rest = &rest[at + 6..];
        }
        out.push_str(rest);
        out
    }
}
