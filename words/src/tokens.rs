//! Words and numbers as room names use them.
//!
//! "Room12" and "9A" are split where letters turn into digits, so the number stands on its
//! own, and numbers lose leading zeros: "09" and "9" are the same room number, "99" and "9"
//! never are.

use crate::lang;

/// A word or a number from normalised text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// Letters, lower-cased and accent-folded.
    Word(String),
    /// Digits without leading zeros (`"0"` for zero).
    Num(String),
}

impl Tok {
    /// The text of the token.
    pub fn text(&self) -> &str {
        match self {
            Tok::Word(t) | Tok::Num(t) => t,
        }
    }
}

/// The tokens of `text`, in order.
pub fn tokens(text: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    for word in lang::words(text) {
        let mut current = String::new();
        let mut digits = false;
        for c in word.chars() {
            let is_digit = c.is_ascii_digit();
            if !current.is_empty() && is_digit != digits {
                out.push(token(std::mem::take(&mut current), digits));
            }
            digits = is_digit;
            current.push(c);
        }
        if !current.is_empty() {
            out.push(token(current, digits));
        }
    }
    out
}

fn token(text: String, digits: bool) -> Tok {
    if !digits {
        return Tok::Word(text);
    }
    let trimmed = text.trim_start_matches('0');
    Tok::Num(if trimmed.is_empty() {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    })
}

/// The words of `tokens`, in order.
pub fn words_of(tokens: &[Tok]) -> Vec<&str> {
    tokens
        .iter()
        .filter_map(|t| match t {
            Tok::Word(w) => Some(w.as_str()),
            Tok::Num(_) => None,
        })
        .collect()
}

/// The numbers of `tokens`, sorted and without repeats: the set a room name carries.
pub fn number_set(tokens: &[Tok]) -> Vec<&str> {
    let mut numbers: Vec<&str> = tokens
        .iter()
        .filter_map(|t| match t {
            Tok::Num(n) => Some(n.as_str()),
            Tok::Word(_) => None,
        })
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    numbers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_split_from_words_and_lose_leading_zeros() {
        assert_eq!(
            tokens("Room09b Aula 3.1"),
            vec![
                Tok::Word("room".into()),
                Tok::Num("9".into()),
                Tok::Word("b".into()),
                Tok::Word("aula".into()),
                Tok::Num("3".into()),
                Tok::Num("1".into()),
            ]
        );
        let t = tokens("Room12 / 9A, Sala 009");
        assert_eq!(words_of(&t), vec!["room", "a", "sala"]);
        assert_eq!(number_set(&t), vec!["12", "9"]);
        assert_eq!(number_set(&tokens("0 00")), vec!["0"]);
    }

    #[test]
    fn apostrophes_join_words() {
        assert_eq!(words_of(&tokens("What's up")), vec!["whats", "up"]);
    }
}
