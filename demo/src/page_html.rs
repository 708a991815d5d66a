//! Reading the approval page's HTML the way a browser would, and writing its forms back.
//!
//! The page is parsed with a WHATWG tokenizer (entities, attribute quoting, comments and
//! `<script>` text handled by the standard's rules) into a small element tree, and forms are
//! encoded with `form_urlencoded`, as a browser encodes them. The demo relies on a few stable
//! ids and form actions of the page's own templates (`heading`, `card-heading`, `tool`,
//! `effects`, `window`, `waiting`, `confirm-text`, `data-challenge`, `/approve`, `/confirm`,
//! `/login`, `/passkeys`), not on how the
//! markup around them is laid out.

use std::collections::BTreeMap;

use html5gum::{DefaultEmitter, Token, Tokenizer};

/// Elements that never have content or an end tag.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr",
];

#[derive(Debug, Default)]
struct Element {
    name: String,
    attributes: BTreeMap<String, String>,
    children: Vec<Node>,
}

#[derive(Debug)]
enum Node {
    Element(Element),
    Text(String),
}

impl Element {
    fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.get(name).map(String::as_str)
    }

    /// Every element below this one, in document order.
    fn descendants(&self) -> Vec<&Element> {
        let mut out = Vec::new();
        self.walk(&mut out);
        out
    }

    fn walk<'a>(&'a self, out: &mut Vec<&'a Element>) {
        for child in &self.children {
            if let Node::Element(e) = child {
                out.push(e);
                e.walk(out);
            }
        }
    }

    /// The visible text: element boundaries count as spaces, but for a name's `<bdi>` (which
    /// sits inside its quotation marks), whitespace is collapsed.
    fn text(&self) -> String {
        let mut raw = String::new();
        self.collect_text(&mut raw);
        raw.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    fn collect_text(&self, out: &mut String) {
        for child in &self.children {
            match child {
                Node::Text(t) => out.push_str(t),
                Node::Element(e) if matches!(e.name.as_str(), "script" | "style") => {}
                // A name isolated inside its quotes: no boundary of its own.
                Node::Element(e) if e.name == "bdi" => e.collect_text(out),
                Node::Element(e) => {
                    out.push(' ');
                    e.collect_text(out);
                    out.push(' ');
                }
            }
        }
    }

    fn has_link(&self) -> bool {
        self.descendants().iter().any(|e| e.name == "a")
    }
}

/// A parsed page.
#[derive(Debug)]
pub struct Page {
    root: Element,
}

impl Page {
    /// Parses `html`. Never fails: like a browser, it makes the best of broken markup.
    pub fn parse(html: &str) -> Page {
        let mut emitter = DefaultEmitter::default();
        // Text inside <script> and <style> is not markup.
        emitter.naively_switch_states(true);
        let mut stack: Vec<Element> = vec![Element::default()];
        for token in Tokenizer::new_with_emitter(html, emitter).flatten() {
            match token {
                Token::StartTag(tag) => {
                    let element = Element {
                        name: text(&tag.name),
                        attributes: tag
                            .attributes
                            .iter()
                            .map(|(k, v)| (text(k), text(v)))
                            .collect(),
                        children: Vec::new(),
                    };
                    if tag.self_closing || VOID.contains(&element.name.as_str()) {
                        push_child(&mut stack, Node::Element(element));
                    } else {
                        stack.push(element);
                    }
                }
                Token::EndTag(tag) => close(&mut stack, &text(&tag.name)),
                Token::String(s) => push_child(&mut stack, Node::Text(text(&s))),
                Token::Comment(_) | Token::Doctype(_) | Token::Error(_) => {}
            }
        }
        while stack.len() > 1 {
            close_top(&mut stack);
        }
        Page {
            root: stack.pop().unwrap_or_default(),
        }
    }

    fn find(&self, test: impl Fn(&Element) -> bool) -> Option<&Element> {
        self.root.descendants().into_iter().find(|e| test(e))
    }

    /// The text of the element with this `id`.
    pub fn text_by_id(&self, id: &str) -> Option<String> {
        self.find(|e| e.attribute("id") == Some(id))
            .map(Element::text)
    }

    /// The named values of the form that posts to `action` (hidden fields and any other
    /// element with both a name and a value), in document order.
    pub fn form_fields(&self, action: &str) -> Option<Vec<(String, String)>> {
        let form = self.find(|e| e.name == "form" && e.attribute("action") == Some(action))?;
        Some(
            form.descendants()
                .into_iter()
                .filter_map(|e| {
                    Some((
                        e.attribute("name")?.to_owned(),
                        e.attribute("value")?.to_owned(),
                    ))
                })
                .collect(),
        )
    }

    /// An attribute of the element with this `id`.
    pub fn attribute_by_id(&self, id: &str, attribute: &str) -> Option<String> {
        self.find(|e| e.attribute("id") == Some(id))?
            .attribute(attribute)
            .map(str::to_owned)
    }

    /// An attribute of the form that posts to `action` (the passkey request rides on
    /// `data-challenge` and `data-allow`).
    pub fn form_attribute(&self, action: &str, attribute: &str) -> Option<String> {
        self.find(|e| e.name == "form" && e.attribute("action") == Some(action))?
            .attribute(attribute)
            .map(str::to_owned)
    }

    /// The text of each `<li>` of the list with this `id`; none when there is no such list.
    pub fn list_items(&self, id: &str) -> Vec<String> {
        let Some(list) = self.find(|e| e.attribute("id") == Some(id)) else {
            return Vec::new();
        };
        list.descendants()
            .into_iter()
            .filter(|e| e.name == "li")
            .map(Element::text)
            .collect()
    }

    /// The text of each non-empty `<p>` of the page that holds no link (a message page's
    /// lines, without the link back).
    pub fn paragraphs(&self) -> Vec<String> {
        self.root
            .descendants()
            .into_iter()
            .filter(|e| e.name == "p" && !e.has_link())
            .map(Element::text)
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// The visible text of `<main>` (or of the whole page), for failure messages.
    pub fn main_text(&self) -> String {
        self.find(|e| e.name == "main").unwrap_or(&self.root).text()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn push_child(stack: &mut [Element], node: Node) {
    if let Some(top) = stack.last_mut() {
        top.children.push(node);
    }
}

/// Closes the innermost open element named `name`, and any left open inside it; an end tag
/// nothing opened is ignored, as a browser ignores it.
fn close(stack: &mut Vec<Element>, name: &str) {
    let Some(at) = stack.iter().skip(1).rposition(|e| e.name == name) else {
        return;
    };
    while stack.len() > at + 1 {
        close_top(stack);
    }
}

fn close_top(stack: &mut Vec<Element>) {
    if stack.len() > 1
        && let Some(done) = stack.pop()
    {
        push_child(stack, Node::Element(done));
    }
}

/// A form body as a browser sends it (`application/x-www-form-urlencoded`).
pub fn form_body(fields: &[(String, String)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
}

/// The value of the field `name`.
pub fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CARD: &str = r#"<!doctype html><html><head><script src="/x.js"></script>
<style>p { color: red } </p></style></head><body><main><h1 id="heading" class="done">Done &amp; dusted</h1>
<!-- <p>a comment</p> -->
<p>It ran.</p><p><a href="/" id="back">Back</a></p>
<ul id="effects"><li>recording: stopped → <b>recording</b></li><li>“<bdi>x</bdi>”</li></ul>
<form method="post" action="/approve" class="approve">
<input type="hidden" name="proposal" value="3">
<input type="hidden" name=token value='a&amp;b &quot;c&quot;'>
<button type="submit" id="approve">Approve</button>
</form></main></body></html>"#;

    #[test]
    fn forms_and_text_come_out_of_the_page_markup() {
        let page = Page::parse(CARD);
        assert_eq!(page.text_by_id("heading").unwrap(), "Done & dusted");
        assert_eq!(page.paragraphs(), vec!["It ran.".to_owned()]);
        assert_eq!(
            page.list_items("effects"),
            vec![
                "recording: stopped → recording".to_owned(),
                "“x”".to_owned()
            ]
        );
        let fields = page.form_fields("/approve").unwrap();
        assert_eq!(field(&fields, "proposal"), Some("3"));
        assert_eq!(field(&fields, "token"), Some("a&b \"c\""));
        assert!(page.form_fields("/confirm").is_none());
        assert_eq!(
            page.form_attribute("/approve", "class").as_deref(),
            Some("approve")
        );
        assert_eq!(page.form_attribute("/approve", "data-challenge"), None);
        assert_eq!(form_body(&fields), "proposal=3&token=a%26b+%22c%22");
        assert!(page.main_text().starts_with("Done & dusted It ran. Back"));
    }

    #[test]
    fn a_heading_after_a_paragraph_reads_by_its_id() {
        let page = Page::parse(
            "<!doctype html><html><head><link rel=\"stylesheet\" href=\"/c.css\">\
             <script src=\"/c.js\" defer></script></head><body><main id=\"confirm\">\
             <p class=\"lead\" id=\"lead\">Read it.</p>\n<h1 id=\"confirm-heading\">Proposal #1: \
             reboot</h1>\n<ul id=\"effects\"><li>one</li></ul></main></body></html>",
        );
        assert_eq!(
            page.text_by_id("confirm-heading").as_deref(),
            Some("Proposal #1: reboot")
        );
        assert_eq!(page.list_items("effects"), vec!["one".to_owned()]);
    }

    #[test]
    fn broken_markup_still_reads() {
        // A stray end tag, an attribute without quotes, elements left open at the end.
        let page = Page::parse("<main><p id=a>one</span></p><p>two<b>three</main>");
        assert_eq!(page.text_by_id("a").unwrap(), "one");
        assert_eq!(page.main_text(), "one two three");
        assert!(Page::parse("").form_fields("/x").is_none());
    }
}
