//! Whole-value string patterns in a small, load-checked syntax.
//!
//! A general regular-expression engine is a large piece of code with large tables (Unicode
//! classes, several matching strategies), and the registry's patterns need almost none of it:
//! ID shapes, a UTC time, a few letters. So the privileged process carries this matcher
//! instead of `regex`/`regex-lite`, and the syntax it accepts is checked when the policy loads:
//!
//! * the pattern is `^…$`, matched against the whole value; no `|` outside a group (`^a|b$`
//!   would match any value ending in `b` in a real engine), no `^` or `$` anywhere else;
//! * literals are printable ASCII; the metacharacters `\ . ^ $ | ( ) [ ] { } ? * +` appear
//!   only escaped with `\` when meant literally;
//! * classes `[…]` of literals and ranges `a-z`, `-` literal only first or last, the escapes
//!   `\\ \] \[ \- \^`; no negation, no `&`/`~` (set operations in some engines);
//! * groups `(…)` with `|` between non-empty alternatives;
//! * quantifiers `?`, `*`, `+`, `{n}`, `{n,}`, `{n,m}` with counts up to [`MAX_COUNT`].
//!
//! Everything else is refused, naming what was found: `.` (engines disagree on which line ends
//! it skips), `\d`/`\w`/`\s` (ASCII or Unicode depending on the engine), backreferences,
//! lookaround, inline flags, lazy quantifiers, negated classes. Inside that syntax every
//! engine agrees, so the registry means the same thing here as in any JSON Schema validator;
//! the differential test holds this to jsonschema's verdicts.
//!
//! Matching is a Thompson NFA walked one character at a time: time linear in the value for a
//! fixed pattern, no backtracking, so no pattern/value pair can make it run away.

use std::fmt;

/// The largest count a `{n,m}` quantifier may name.
pub const MAX_COUNT: u32 = 1000;
/// The largest compiled program (instructions) a pattern may expand to.
const MAX_PROGRAM: usize = 10_000;

/// Why a pattern was refused; the text names what was found, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError(String);

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(problem: impl Into<String>) -> Result<T, PatternError> {
    Err(PatternError(problem.into()))
}

/// A compiled whole-value pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    program: Vec<Inst>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Inst {
    /// Consume one character inside one of these inclusive ASCII ranges.
    Class(Vec<(u8, u8)>),
    /// Continue at both.
    Split(usize, usize),
    /// Continue at this one.
    Jump(usize),
    /// The whole value matched.
    Match,
}

#[derive(Debug, Clone)]
enum Ast {
    Class(Vec<(u8, u8)>),
    Concat(Vec<Ast>),
    Alternate(Vec<Ast>),
    Repeat {
        node: Box<Ast>,
        min: u32,
        max: Option<u32>,
    },
}

const META: &[u8] = b"\\.^$|()[]{}?*+";

impl Pattern {
    /// Compiles `^…$` in the syntax above, or says what it does not accept.
    pub fn compile(pattern: &str) -> Result<Pattern, PatternError> {
        let Some(body) = pattern.strip_prefix('^') else {
            return refuse("must start with ^ (a pattern matches the whole value)");
        };
        let body = match body.strip_suffix('$') {
            Some(b) if !escaped_end(b) => b,
            _ => return refuse("must end with an unescaped $ (a pattern matches the whole value)"),
        };
        if let Some(c) = body.chars().find(|c| !(' '..='~').contains(c)) {
            return refuse(format!(
                "holds {}, and only printable ASCII is accepted",
                describe(c)
            ));
        }
        let mut parser = Parser {
            bytes: body.as_bytes(),
            at: 0,
        };
        let ast = parser.sequence(0)?;
        if let Some(&b) = parser.peek() {
            // `sequence` stops only at `|` or `)` at the top.
            return refuse(if b == b'|' {
                "has | outside a group, which would not match the whole value"
            } else {
                "has a ) without its ("
            });
        }
        let mut program = Vec::new();
        emit(&ast, &mut program)?;
        program.push(Inst::Match);
        Ok(Pattern { program })
    }

    /// Whether the whole of `text` matches.
    pub fn is_match(&self, text: &str) -> bool {
        let mut current = States::new(self.program.len());
        let mut next = States::new(self.program.len());
        current.add(&self.program, 0);
        for c in text.chars() {
            if current.list.is_empty() {
                return false;
            }
            next.clear();
            let byte = u8::try_from(u32::from(c)).ok().filter(u8::is_ascii);
            for &pc in &current.list {
                if let (Some(Inst::Class(ranges)), Some(b)) = (self.program.get(pc), byte)
                    && ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&b))
                {
                    next.add(&self.program, pc + 1);
                }
            }
            std::mem::swap(&mut current, &mut next);
        }
        current
            .list
            .iter()
            .any(|&pc| matches!(self.program.get(pc), Some(Inst::Match)))
    }
}

/// True when the text ends in an odd run of backslashes (its last character is escaped).
fn escaped_end(text: &str) -> bool {
    text.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 1
}

fn describe(c: char) -> String {
    if c.is_control() {
        format!("the control character U+{:04X}", u32::from(c))
    } else {
        format!("the character U+{:04X}", u32::from(c))
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&u8> {
        self.bytes.get(self.at)
    }

    fn bump(&mut self) -> Option<u8> {
        let b = self.bytes.get(self.at).copied();
        if b.is_some() {
            self.at += 1;
        }
        b
    }

    /// Items up to `|`, `)` or the end.
    fn sequence(&mut self, depth: usize) -> Result<Ast, PatternError> {
        let mut items = Vec::new();
        while let Some(&b) = self.peek() {
            let atom = match b {
                b'|' | b')' => break,
                b'(' => {
                    self.at += 1;
                    if depth >= 16 {
                        return refuse("nests groups more than 16 deep");
                    }
                    if self.peek() == Some(&b'?') {
                        return refuse(
                            "has (? (lookaround, flags and named groups are not accepted)",
                        );
                    }
                    let group = self.alternation(depth + 1)?;
                    if self.bump() != Some(b')') {
                        return refuse("has a ( without its )");
                    }
                    group
                }
                b'[' => {
                    self.at += 1;
                    Ast::Class(self.class()?)
                }
                b'\\' => {
                    self.at += 1;
                    match self.bump() {
                        Some(e) if META.contains(&e) => Ast::Class(vec![(e, e)]),
                        Some(e) => {
                            return refuse(format!(
                                "has the escape \\{} (only a metacharacter may be escaped)",
                                char::from(e)
                            ));
                        }
                        None => return refuse("ends with a lone \\"),
                    }
                }
                b'.' => return refuse("has . (name the characters with a class instead)"),
                b'^' | b'$' => {
                    return refuse(format!(
                        "has {} inside (only the first ^ and the last $ anchor)",
                        char::from(b)
                    ));
                }
                b'?' | b'*' | b'+' | b'{' => {
                    return refuse(format!(
                        "has {} with nothing to repeat (escape it to mean the character)",
                        char::from(b)
                    ));
                }
                b']' | b'}' => {
                    return refuse(format!(
                        "has an unescaped {} (escape it to mean the character)",
                        char::from(b)
                    ));
                }
                other => {
                    self.at += 1;
                    Ast::Class(vec![(other, other)])
                }
            };
            items.push(self.quantified(atom)?);
        }
        Ok(Ast::Concat(items))
    }

    fn alternation(&mut self, depth: usize) -> Result<Ast, PatternError> {
        let mut options = vec![self.sequence(depth)?];
        while self.peek() == Some(&b'|') {
            self.at += 1;
            options.push(self.sequence(depth)?);
        }
        if options
            .iter()
            .any(|o| matches!(o, Ast::Concat(items) if items.is_empty()))
        {
            return refuse("has an empty group or alternative");
        }
        Ok(Ast::Alternate(options))
    }

    fn quantified(&mut self, atom: Ast) -> Result<Ast, PatternError> {
        let counts = match self.peek() {
            Some(b'?') => Some((0, Some(1))),
            Some(b'*') => Some((0, None)),
            Some(b'+') => Some((1, None)),
            _ => None,
        };
        let (min, max) = match counts {
            Some(counts) => {
                self.at += 1;
                counts
            }
            None if self.peek() == Some(&b'{') => {
                self.at += 1;
                self.counts()?
            }
            None => return Ok(atom),
        };
        // `a+?` is lazy in most engines and `a**` an error in some: refuse both.
        if matches!(self.peek(), Some(b'?' | b'*' | b'+' | b'{')) {
            return refuse("has two quantifiers in a row (lazy or stacked repetition)");
        }
        Ok(Ast::Repeat {
            node: Box::new(atom),
            min,
            max,
        })
    }

    /// `n}`, `n,}` or `n,m}` after a `{`.
    fn counts(&mut self) -> Result<(u32, Option<u32>), PatternError> {
        let min = self.number()?.ok_or_else(|| {
            PatternError("has { without a count (escape it to mean the character)".into())
        })?;
        let max = match self.bump() {
            Some(b'}') => return Ok((min, Some(min))),
            Some(b',') => self.number()?,
            _ => return refuse("has a malformed {…} count"),
        };
        if self.bump() != Some(b'}') {
            return refuse("has a malformed {…} count");
        }
        if let Some(max) = max
            && max < min
        {
            return refuse("has a {n,m} count with m below n");
        }
        Ok((min, max))
    }

    fn number(&mut self) -> Result<Option<u32>, PatternError> {
        let start = self.at;
        while self.peek().is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let digits = self.bytes.get(start..self.at).unwrap_or_default();
        if digits.is_empty() {
            return Ok(None);
        }
        let value = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse::<u32>().ok())
            .filter(|n| *n <= MAX_COUNT);
        match value {
            Some(n) => Ok(Some(n)),
            None => refuse(format!("has a count above {MAX_COUNT}")),
        }
    }

    /// The inside of `[…]` after the `[`.
    fn class(&mut self) -> Result<Vec<(u8, u8)>, PatternError> {
        if self.peek() == Some(&b'^') {
            return refuse("has a negated class [^…] (list the characters allowed instead)");
        }
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let lo = match self.class_char(first)? {
                ClassChar::End => break,
                ClassChar::Char(c) => c,
            };
            first = false;
            let is_range = self.peek() == Some(&b'-') && self.bytes.get(self.at + 1) != Some(&b']');
            if is_range {
                self.at += 1;
                let hi = match self.class_char(false)? {
                    ClassChar::Char(c) => c,
                    ClassChar::End => return refuse("has an unfinished range in a class"),
                };
                // Ranges stay within digits, lower-case or upper-case letters: a range over
                // punctuation is easy to misread, and `--` is set syntax in some engines.
                let same_kind = [
                    u8::is_ascii_digit,
                    u8::is_ascii_lowercase,
                    u8::is_ascii_uppercase,
                ]
                .iter()
                .any(|kind| kind(&lo) && kind(&hi));
                if !same_kind {
                    return refuse("has a range in a class that is not within digits, a-z or A-Z");
                }
                if hi < lo {
                    return refuse("has a range in a class that runs backwards");
                }
                if self.peek() == Some(&b'-') && self.bytes.get(self.at + 1) != Some(&b']') {
                    return refuse("has - right after a range in a class (escape it as \\-)");
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        if ranges.is_empty() {
            return refuse("has an empty class []");
        }
        Ok(ranges)
    }

    fn class_char(&mut self, first: bool) -> Result<ClassChar, PatternError> {
        match self.bump() {
            None => refuse("has a [ without its ]"),
            Some(b']') if !first => Ok(ClassChar::End),
            Some(b']') => refuse("has an empty class []"),
            Some(b'\\') => match self.bump() {
                Some(e @ (b'\\' | b']' | b'[' | b'-' | b'^')) => Ok(ClassChar::Char(e)),
                Some(e) => refuse(format!(
                    "has the escape \\{} in a class (only \\\\ \\] \\[ \\- \\^ are accepted)",
                    char::from(e)
                )),
                None => refuse("ends with a lone \\"),
            },
            Some(b @ (b'[' | b'&' | b'~')) => refuse(format!(
                "has an unescaped {} in a class (set syntax differs between engines)",
                char::from(b)
            )),
            Some(b'-') if !first && self.peek() != Some(&b']') => {
                refuse("has - inside a class where it is not a range (put it first or last)")
            }
            Some(c) => Ok(ClassChar::Char(c)),
        }
    }
}

enum ClassChar {
    Char(u8),
    End,
}

fn push(program: &mut Vec<Inst>, inst: Inst) -> Result<usize, PatternError> {
    if program.len() >= MAX_PROGRAM {
        return refuse(format!(
            "expands to more than {MAX_PROGRAM} steps (lower its counts)"
        ));
    }
    program.push(inst);
    Ok(program.len() - 1)
}

fn patch(program: &mut [Inst], at: usize, target: usize) {
    match program.get_mut(at) {
        Some(Inst::Split(_, second)) => *second = target,
        Some(Inst::Jump(to)) => *to = target,
        _ => {}
    }
}

fn emit(ast: &Ast, program: &mut Vec<Inst>) -> Result<(), PatternError> {
    match ast {
        Ast::Class(ranges) => {
            push(program, Inst::Class(ranges.clone()))?;
        }
        Ast::Concat(items) => {
            for item in items {
                emit(item, program)?;
            }
        }
        Ast::Alternate(options) => {
            // split → option 1 → jump end; split → option 2 → jump end; …; last option
            let mut jumps = Vec::new();
            let count = options.len();
            for (i, option) in options.iter().enumerate() {
                if i + 1 < count {
                    let split = push(program, Inst::Split(0, 0))?;
                    let start = program.len();
                    if let Some(Inst::Split(first, _)) = program.get_mut(split) {
                        *first = start;
                    }
                    emit(option, program)?;
                    jumps.push(push(program, Inst::Jump(0))?);
                    let next = program.len();
                    patch(program, split, next);
                } else {
                    emit(option, program)?;
                }
            }
            let end = program.len();
            for jump in jumps {
                patch(program, jump, end);
            }
        }
        Ast::Repeat { node, min, max } => {
            for _ in 0..*min {
                emit(node, program)?;
            }
            match max {
                None => {
                    // loop: split(body, out); body; jump loop
                    let split = push(program, Inst::Split(0, 0))?;
                    if let Some(Inst::Split(first, _)) = program.get_mut(split) {
                        *first = split + 1;
                    }
                    emit(node, program)?;
                    push(program, Inst::Jump(split))?;
                    let out = program.len();
                    patch(program, split, out);
                }
                Some(max) => {
                    // (body (body (…)?)?)? — each optional copy may stop the run.
                    let mut splits = Vec::new();
                    for _ in *min..*max {
                        let split = push(program, Inst::Split(0, 0))?;
                        if let Some(Inst::Split(first, _)) = program.get_mut(split) {
                            *first = split + 1;
                        }
                        splits.push(split);
                        emit(node, program)?;
                    }
                    let out = program.len();
                    for split in splits {
                        patch(program, split, out);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The NFA states live at one step of the walk, in order of first arrival.
struct States {
    /// States that consume a character or accept, in order of arrival.
    list: Vec<usize>,
    /// Every state entered this step, consuming or not, so `clear` can forget them all.
    entered: Vec<usize>,
    seen: Vec<bool>,
    stack: Vec<usize>,
}

impl States {
    fn new(size: usize) -> States {
        States {
            list: Vec::new(),
            entered: Vec::new(),
            seen: vec![false; size],
            stack: Vec::new(),
        }
    }

    fn clear(&mut self) {
        for &pc in &self.entered {
            if let Some(s) = self.seen.get_mut(pc) {
                *s = false;
            }
        }
        self.entered.clear();
        self.list.clear();
    }

    /// Adds `pc` and every state reachable from it without consuming a character. A state
    /// already present is not entered again, which is what ends empty loops like `(a*)*`.
    fn add(&mut self, program: &[Inst], pc: usize) {
        self.stack.push(pc);
        while let Some(pc) = self.stack.pop() {
            match self.seen.get_mut(pc) {
                Some(seen) if !*seen => *seen = true,
                _ => continue,
            }
            self.entered.push(pc);
            match program.get(pc) {
                Some(Inst::Split(a, b)) => {
                    self.stack.push(*b);
                    self.stack.push(*a);
                }
                Some(Inst::Jump(to)) => self.stack.push(*to),
                Some(Inst::Class(_) | Inst::Match) => self.list.push(pc),
                None => {}
            }
        }
    }
}

// A test fails by panicking.
#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::Pattern;

    fn matches(pattern: &str, text: &str) -> bool {
        Pattern::compile(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(text)
    }

    fn refused(pattern: &str) -> String {
        match Pattern::compile(pattern) {
            Ok(_) => panic!("{pattern} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn whole_value_anchoring() {
        for bad in [
            "[0-9a-f]{8,32}$",
            "^[0-9a-f]{8,32}",
            "^a|b$",
            "^a\\$",
            "(?m)^a$",
            "^(?m)a$",
            "^a)($",
            "^a$b$",
            "^a^b$",
        ] {
            refused(bad);
        }
        assert!(matches("^(start|stop)$", "stop"));
        assert!(matches("^[|]$", "|"));
        assert!(matches("^a\\\\$", "a\\"));
        assert!(!matches("^[0-9]{2}$", "12\n"));
        assert!(!matches("^[0-9]{2}$", "123"));
        assert!(!matches("^[0-9]{2}$", " 12"));
    }

    #[test]
    fn the_registry_patterns() {
        let master = "^[0-9a-f]{8,32}$";
        assert!(matches(master, "19012341234"));
        assert!(matches(master, &"a".repeat(32)));
        assert!(!matches(master, &"a".repeat(33)));
        assert!(!matches(master, &"a".repeat(7)));
        assert!(!matches(master, "1901234123A"));
        let channel = "^[0-9a-f]{8,32}-[1-9][0-9]{0,2}$";
        assert!(matches(channel, "19012341234-1"));
        assert!(matches(channel, "19012341234-999"));
        assert!(!matches(channel, "19012341234-0"));
        assert!(!matches(channel, "19012341234-1000"));
        let event = "^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$";
        assert!(matches(event, "evt_2026-09-24"));
        assert!(!matches(event, "-evt"));
        assert!(!matches(event, "évt"));
        let time = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$";
        assert!(matches(time, "2026-09-24T20:08:00Z"));
        assert!(!matches(time, "2026-09-24T20:08:00+00:00"));
    }

    #[test]
    fn quantifiers_groups_and_classes() {
        assert!(matches("^a?b*c+$", "c"));
        assert!(matches("^a?b*c+$", "abbbcc"));
        assert!(!matches("^a?b*c+$", "aab"));
        assert!(matches("^(ab|cd){2,}$", "abcdab"));
        assert!(!matches("^(ab|cd){2,}$", "ab"));
        assert!(matches("^x{3}$", "xxx"));
        assert!(!matches("^x{3}$", "xx"));
        assert!(matches("^[-a]+$", "-a-"));
        assert!(matches("^[a\\]]+$", "]a"));
        assert!(matches("^\\.\\*$", ".*"));
        assert!(matches("^$", ""));
        assert!(!matches("^$", "a"));
        // Empty loops end: the walk never enters a state twice in one step.
        assert!(matches("^(a*)*b$", "aaab"));
        assert!(!matches("^(a*)*b$", &"a".repeat(10_000)));
    }

    #[test]
    fn everything_outside_the_syntax_is_refused_by_name() {
        for (bad, says) in [
            ("^.$", "."),
            ("^\\d$", "\\d"),
            ("^\\w+$", "\\w"),
            ("^(a)\\1$", "\\1"),
            ("^(?=a)a$", "(?"),
            ("^(?:a)$", "(?"),
            ("^a+?$", "two quantifiers"),
            ("^a**$", "two quantifiers"),
            ("^[^a]$", "negated"),
            ("^[a-9]$", "range"),
            ("^[z-a]$", "backwards"),
            ("^[a--]$", "range"),
            ("^[--a]$", "range"),
            ("^[a&&b]$", "&"),
            ("^[a~~b]$", "~"),
            ("^[]$", "empty class"),
            ("^()$", "empty"),
            ("^(a|)$", "empty"),
            ("^a{1001}$", "count above"),
            ("^a{3,2}$", "below"),
            ("^a{,2}$", "count"),
            ("^{2}$", "nothing to repeat"),
            ("^a}$", "}"),
            ("^é$", "U+00E9"),
            ("^a\t$", "control"),
            (
                "^[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}$",
                "steps",
            ),
        ] {
            let text = refused(bad);
            assert!(text.contains(says), "{bad}: {text}");
        }
    }
}
