//! The status row under the legend: the latest message that came while the chart owns the
//! terminal (a provider host's line, prfmon's own log record), dim, on one row, with how many
//! came before it; all of them are written to stderr after the chart quits.

use prfdata_untrusted::text::{escape_field, Style as TextStyle};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::state::Message;
use super::text::keep_start;

/// The status row's text for `message` in `width` columns: control characters escaped, cut to
/// fit, `(+N)` for the N that came before it.
pub fn line(message: &Message, width: usize) -> String {
    let text = escape_field(message.text.trim_end(), TextStyle::Terminal);
    let more = if message.more > 0 {
        format!(" (+{})", message.more)
    } else {
        String::new()
    };
    let room = width.saturating_sub(more.chars().count());
    format!("{}{more}", keep_start(&text, room))
}

/// Draws `message` (if any) on the one row of `area`.
pub fn render(frame: &mut Frame, area: Rect, message: Option<&Message>) {
    let Some(message) = message else {
        return;
    };
    let text = line(message, usize::from(area.width));
    let style = Style::default().add_modifier(Modifier::DIM);
    frame.render_widget(Paragraph::new(text).style(style), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_escapes_cuts_and_counts() {
        let message = Message {
            text: "prfdata-provider: app A: no data\x1b[2J and more text\n".into(),
            more: 3,
        };
        let line = line(&message, 40);
        assert!(!line.contains('\x1b'), "{line}");
        assert!(line.ends_with("… (+3)"), "{line}");
        assert_eq!(line.chars().count(), 40, "{line}");
        let short = Message {
            text: "ok".into(),
            more: 0,
        };
        assert_eq!(super::line(&short, 40), "ok");
    }
}
