//! Hint templates (`{tool} failed: {error}`) and delays written for people.

/// A hint template, split once into text and placeholders so that filling it is a walk, not
/// a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
    /// Byte ranges of `text`: literal text, or a placeholder's name.
    parts: Vec<(bool, std::ops::Range<usize>)>,
}

impl Template {
    /// Splits a template; an unclosed `{` is kept as text.
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut at = 0;
        while let Some(open) = text[at..].find('{').map(|i| at + i) {
            let Some(close) = text[open + 1..].find('}').map(|i| open + 1 + i) else {
                break;
            };
            if open > at {
                parts.push((false, at..open));
            }
            parts.push((true, open + 1..close));
            at = close + 1;
        }
        if at < text.len() {
            parts.push((false, at..text.len()));
        }
        Template {
            text: text.to_owned(),
            parts,
        }
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Fills the template, asking `write` to append each placeholder's value; a placeholder it
    /// does not know (`write` returns false) is kept as written.
    pub fn render(&self, mut write: impl FnMut(&str, &mut String) -> bool) -> String {
        // Room for the values too (an error text often runs past 100 bytes): one allocation.
        let mut out = String::with_capacity(self.text.len() + 160);
        for (slot, range) in &self.parts {
            let piece = &self.text[range.clone()];
            if !*slot {
                out.push_str(piece);
            } else if !write(piece, &mut out) {
                out.push('{');
                out.push_str(piece);
                out.push('}');
            }
        }
        out
    }
}

/// A delay for people: `250ms`, `1.5s`, `2m05s`.
pub fn human_ms(ms: u64) -> String {
    let mut out = String::with_capacity(8);
    write_human_ms(&mut out, ms);
    out
}

/// Appends a delay for people (see [`human_ms`]).
pub fn write_human_ms(out: &mut String, ms: u64) {
    use std::fmt::Write as _;
    let _ = if ms < 1000 {
        write!(out, "{ms}ms")
    } else if ms < 60_000 {
        let tenths = ms.div_ceil(100);
        if tenths.is_multiple_of(10) {
            write!(out, "{}s", tenths / 10)
        } else {
            write!(out, "{}.{}s", tenths / 10, tenths % 10)
        }
    } else if ms < 3_600_000 {
        let seconds = ms.div_ceil(1000);
        write!(out, "{}m{:02}s", seconds / 60, seconds % 60)
    } else {
        let minutes = ms.div_ceil(60_000);
        write!(out, "{}h{:02}m", minutes / 60, minutes % 60)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    // A plain scanning fill, the reference a parsed template must agree with.
    /// Fills a template's placeholders from `(name, value)` pairs.
    fn fill(template: &str, values: &[(&str, &str)]) -> String {
        fill_with(template, |name, out| {
            match values.iter().find(|(n, _)| *n == name) {
                Some((_, value)) => {
                    out.push_str(value);
                    true
                }
                None => false,
            }
        })
    }

    /// Fills a template, asking `write` to append each placeholder's value; a placeholder it
    /// does not know (`write` returns false) is kept as written.
    fn fill_with(template: &str, mut write: impl FnMut(&str, &mut String) -> bool) -> String {
        let mut out = String::with_capacity(template.len() + 48);
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else {
                out.push_str(&rest[open..]);
                return out;
            };
            if !write(&after[..close], &mut out) {
                out.push_str(&rest[open..=open + close + 1]);
            }
            rest = &after[close + 1..];
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn templates_fill_and_keep_unknown_text() {
        assert_eq!(
            fill(
                "{tool} failed: {error}",
                &[("tool", "search"), ("error", "503")]
            ),
            "search failed: 503"
        );
        assert_eq!(fill("a {b} c", &[]), "a {b} c");
        assert_eq!(fill("open { only", &[]), "open { only");
    }

    #[test]
    fn a_parsed_template_renders_like_fill() {
        for text in [
            "{tool} failed: {error}",
            "no slots",
            "a {b} c {",
            "{x}{y}",
            "",
        ] {
            let values = [("tool", "search"), ("error", "503"), ("x", "1")];
            let rendered = Template::parse(text).render(|name, out| {
                match values.iter().find(|(n, _)| *n == name) {
                    Some((_, v)) => {
                        out.push_str(v);
                        true
                    }
                    None => false,
                }
            });
            assert_eq!(rendered, fill(text, &values), "{text}");
        }
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_ms(250), "250ms");
        assert_eq!(human_ms(1500), "1.5s");
        assert_eq!(human_ms(2000), "2s");
        assert_eq!(human_ms(125_000), "2m05s");
        assert_eq!(human_ms(3_600_122), "1h01m");
        assert_eq!(human_ms(7_200_000), "2h00m");
    }
}
