//! The JSON Schema subset the tool registry uses, checked and applied by hand.
//!
//! Why not a general JSON Schema library: the executor is the privileged process and its
//! reviewer must be able to read everything it links. A general validator (draft 2020-12 with
//! formats, `$ref` resolution, regular expressions and big-number arithmetic) brought about
//! fifty crates, Unicode tables and two regex engines into it, to check six small argument
//! schemas. sudo-rs made the same trade for the same reason: a setuid program carries the
//! parser it needs, not the most general one. So this module implements exactly the keywords
//! `tool_policy.yaml` uses, with draft 2020-12's meaning, and **refuses every other keyword
//! when the schema is loaded**, naming it: a keyword this code does not implement can never
//! be present and silently ignored.
//!
//! Implemented (draft 2020-12 meaning):
//!
//! * `type`: one of `object`, `array`, `string`, `integer` (a number with no fractional part,
//!   so `1.0` counts), `number`, `boolean`;
//! * objects: `properties`, `required`, `additionalProperties: false` (no other value);
//! * `enum` (a non-empty list of distinct strings, integers or booleans) and `const` (one);
//! * strings: `minLength`/`maxLength` (in Unicode code points) and `pattern`, a whole-value
//!   pattern in the small syntax of [`pattern`];
//! * arrays: `items` (one subschema), `minItems`/`maxItems`;
//! * numbers: `minimum`/`maximum` (inclusive, integers, compared exactly with any number);
//! * a subschema may be `false` (nothing is allowed there);
//! * annotations with no effect on validation: `title`, `description` (strings), `default`
//!   (any value; the policy fills top-level defaults before validating), and `$schema` at the
//!   top only, naming draft 2020-12.
//!
//! A keyword that cannot apply to the node's declared `type` (say `maxItems` on a string) is
//! refused too: it would be ignored just the same. The schema `true` is refused: it accepts
//! anything.
//!
//! `protocol/tests/schema_differential.rs` and the `schema` fuzz target run this validator and
//! jsonschema side by side on every registry schema and many generated argument objects and
//! require the same verdict from both.

mod pattern;

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Number, Value};

pub use pattern::{MAX_COUNT, Pattern, PatternError};

/// The one dialect implemented.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Every keyword a schema may hold.
pub const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "pattern",
    "minLength",
    "maxLength",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "title",
    "description",
    "default",
    "$schema",
];

/// Why a schema was refused at load: where (a JSON pointer into the schema) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON pointer to the schema node or keyword at fault (`""` is the top).
    pub path: String,
    /// What is wrong, in plain words.
    pub problem: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.path.is_empty() {
            "the top"
        } else {
            &self.path
        };
        write!(f, "at {at}: {}", self.problem)
    }
}

impl std::error::Error for SchemaError {}

/// What a value failed. Worded about the value's place, never quoting the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Not of the schema's `type`.
    Type(Type),
    /// Not one of the `enum` values, or not the `const` value.
    NotAllowedValue,
    /// A `required` property is missing (its name).
    Required(String),
    /// A property not listed under `properties` while `additionalProperties` is false.
    Unexpected(String),
    /// The subschema here is `false`.
    Forbidden,
    /// Fewer characters than `minLength`.
    TooShort(u64),
    /// More characters than `maxLength`.
    TooLong(u64),
    /// Does not match `pattern`.
    Pattern,
    /// Fewer items than `minItems`.
    TooFewItems(u64),
    /// More items than `maxItems`.
    TooManyItems(u64),
    /// Below `minimum`.
    BelowMinimum(i128),
    /// Above `maximum`.
    AboveMaximum(i128),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Type(t) => write!(f, "must be {}", t.article()),
            Problem::NotAllowedValue => f.write_str("is not one of the allowed values"),
            Problem::Required(_) => f.write_str("is required"),
            Problem::Unexpected(_) => f.write_str("is not an allowed argument"),
            Problem::Forbidden => f.write_str("is not allowed"),
            Problem::TooShort(n) => write!(f, "must be at least {n} character(s) long"),
            Problem::TooLong(n) => write!(f, "must be at most {n} character(s) long"),
            Problem::Pattern => f.write_str("does not have the required form"),
            Problem::TooFewItems(n) => write!(f, "must hold at least {n} item(s)"),
            Problem::TooManyItems(n) => write!(f, "must hold at most {n} item(s)"),
            Problem::BelowMinimum(n) => write!(f, "must be at least {n}"),
            Problem::AboveMaximum(n) => write!(f, "must be at most {n}"),
        }
    }
}

/// The first thing a value failed: where (path segments into the value) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Property names and array indices from the top of the value to the failing part.
    pub path: Vec<String>,
    /// What failed there.
    pub problem: Problem,
}

impl Violation {
    /// The path as `a/0/b` (empty at the top).
    pub fn pointer(&self) -> String {
        self.path.join("/")
    }
}

/// The JSON types a schema may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// A JSON object.
    Object,
    /// A JSON array.
    Array,
    /// A JSON string.
    String,
    /// A number with no fractional part.
    Integer,
    /// Any number.
    Number,
    /// `true` or `false`.
    Boolean,
}

impl Type {
    fn parse(name: &str) -> Option<Type> {
        Some(match name {
            "object" => Type::Object,
            "array" => Type::Array,
            "string" => Type::String,
            "integer" => Type::Integer,
            "number" => Type::Number,
            "boolean" => Type::Boolean,
            _ => return None,
        })
    }

    fn article(self) -> &'static str {
        match self {
            Type::Object => "an object",
            Type::Array => "a list",
            Type::String => "a string",
            Type::Integer => "an integer",
            Type::Number => "a number",
            Type::Boolean => "true or false",
        }
    }

    fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Type::Object, Value::Object(_))
            | (Type::Array, Value::Array(_))
            | (Type::String, Value::String(_))
            | (Type::Number, Value::Number(_))
            | (Type::Boolean, Value::Bool(_)) => true,
            (Type::Integer, Value::Number(n)) => is_integer(n),
            _ => false,
        }
    }
}

/// Draft 2020-12's integer: any number whose fractional part is zero.
fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// A compiled schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    root: Node,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// The schema `false`.
    Nothing,
    Rules(Box<Rules>),
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Rules {
    kind: Option<Type>,
    /// In the schema's key order.
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    closed: bool,
    one_of: Option<Vec<Value>>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<Pattern>,
    items: Option<Node>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    minimum: Option<i128>,
    maximum: Option<i128>,
}

fn fail<T>(path: &str, problem: impl Into<String>) -> Result<T, SchemaError> {
    Err(SchemaError {
        path: path.to_owned(),
        problem: problem.into(),
    })
}

/// One step of a JSON pointer (`~` and `/` escaped as RFC 6901 says).
fn step(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// The keywords that only mean something for one type.
fn only_for(keyword: &str) -> Option<&'static [Type]> {
    Some(match keyword {
        "properties" | "required" | "additionalProperties" => &[Type::Object],
        "items" | "minItems" | "maxItems" => &[Type::Array],
        "pattern" | "minLength" | "maxLength" => &[Type::String],
        "minimum" | "maximum" => &[Type::Integer, Type::Number],
        _ => return None,
    })
}

impl Schema {
    /// Checks a schema against the subset and compiles it, or says where and why not.
    pub fn compile(schema: &Value) -> Result<Schema, SchemaError> {
        if let Some(object) = schema.as_object()
            && let Some(declared) = object.get("$schema")
            && declared.as_str() != Some(DRAFT_2020_12)
        {
            return fail(
                "/$schema",
                format!("must name draft 2020-12 ({DRAFT_2020_12}), the only dialect implemented"),
            );
        }
        Ok(Schema {
            root: node(schema, "", true)?,
        })
    }

    /// The first thing `value` fails, if any. Only the verdict is defined to match other
    /// validators; which of several failures is reported first is this code's own order.
    pub fn validate(&self, value: &Value) -> Result<(), Violation> {
        let mut path = Vec::new();
        self.root
            .check(value, &mut path)
            .map_err(|problem| Violation { path, problem })
    }

    /// Whether `value` passes.
    pub fn is_valid(&self, value: &Value) -> bool {
        self.validate(value).is_ok()
    }
}

fn node(schema: &Value, path: &str, top: bool) -> Result<Node, SchemaError> {
    let object = match schema {
        Value::Bool(false) => return Ok(Node::Nothing),
        Value::Bool(true) => return fail(path, "the schema `true` accepts anything"),
        Value::Object(object) => object,
        _ => return fail(path, "a schema must be a mapping (or false)"),
    };
    let mut rules = Rules::default();
    if let Some(t) = object.get("type") {
        let name = t.as_str().ok_or_else(|| SchemaError {
            path: step(path, "type"),
            problem: "must name one type".to_owned(),
        })?;
        rules.kind = Some(Type::parse(name).ok_or_else(|| SchemaError {
            path: step(path, "type"),
            problem: format!(
                "{name:?} is not a type this loader implements (object, array, string, \
                 integer, number, boolean)"
            ),
        })?);
    }
    for (key, value) in object {
        let here = step(path, key);
        if !KEYWORDS.contains(&key.as_str()) {
            return fail(
                &here,
                format!(
                    "the keyword {key:?} is not implemented by this loader, so it would be \
                     ignored; use only {}",
                    KEYWORDS.join(", ")
                ),
            );
        }
        if let (Some(kind), Some(types)) = (rules.kind, only_for(key))
            && !types.contains(&kind)
        {
            return fail(
                &here,
                format!(
                    "{key} cannot apply to {}, so it would be ignored",
                    kind.article()
                ),
            );
        }
        match key.as_str() {
            "type" => {}
            "properties" => {
                let map = value.as_object().ok_or_else(|| SchemaError {
                    path: here.clone(),
                    problem: "must map names to schemas".to_owned(),
                })?;
                for (name, sub) in map {
                    rules
                        .properties
                        .push((name.clone(), node(sub, &step(&here, name), false)?));
                }
            }
            "required" => rules.required = names(value, &here)?,
            "additionalProperties" => {
                if value != &Value::Bool(false) {
                    return fail(&here, "only additionalProperties: false is implemented");
                }
                rules.closed = true;
            }
            "enum" => {
                let options = value.as_array().ok_or_else(|| SchemaError {
                    path: here.clone(),
                    problem: "must be a list".to_owned(),
                })?;
                if options.is_empty() {
                    return fail(&here, "must list at least one value");
                }
                for (i, option) in options.iter().enumerate() {
                    scalar(option, &step(&here, &i.to_string()))?;
                    if options.iter().take(i).any(|o| equal(o, option)) {
                        return fail(&here, "lists a value twice");
                    }
                }
                merge_allowed(&mut rules, options.clone());
            }
            "const" => {
                scalar(value, &here)?;
                merge_allowed(&mut rules, vec![value.clone()]);
            }
            "pattern" => {
                let text = value.as_str().ok_or_else(|| SchemaError {
                    path: here.clone(),
                    problem: "must be a string".to_owned(),
                })?;
                rules.pattern = Some(Pattern::compile(text).map_err(|e| SchemaError {
                    path: here.clone(),
                    problem: format!("the pattern {e}"),
                })?);
            }
            "minLength" => rules.min_length = Some(count(value, &here)?),
            "maxLength" => rules.max_length = Some(count(value, &here)?),
            "minItems" => rules.min_items = Some(count(value, &here)?),
            "maxItems" => rules.max_items = Some(count(value, &here)?),
            "items" => rules.items = Some(node(value, &here, false)?),
            "minimum" => rules.minimum = Some(bound(value, &here)?),
            "maximum" => rules.maximum = Some(bound(value, &here)?),
            "title" | "description" => {
                if !value.is_string() {
                    return fail(&here, "must be a string");
                }
            }
            "default" => {}
            "$schema" if top => {}
            "$schema" => return fail(&here, "$schema belongs at the top only"),
            _ => return fail(&here, "is not implemented"),
        }
    }
    let pairs = [
        (rules.min_length, rules.max_length, "minLength", "maxLength"),
        (rules.min_items, rules.max_items, "minItems", "maxItems"),
    ];
    for (low, high, low_name, high_name) in pairs {
        if let (Some(l), Some(h)) = (low, high)
            && l > h
        {
            return fail(
                path,
                format!("{low_name} is above {high_name}: nothing could pass"),
            );
        }
    }
    if let (Some(l), Some(h)) = (rules.minimum, rules.maximum)
        && l > h
    {
        return fail(path, "minimum is above maximum: nothing could pass");
    }
    Ok(Node::Rules(Box::new(rules)))
}

/// `enum` and `const` on one node: a value must satisfy both.
fn merge_allowed(rules: &mut Rules, values: Vec<Value>) {
    rules.one_of = Some(match rules.one_of.take() {
        None => values,
        Some(before) => before
            .into_iter()
            .filter(|b| values.iter().any(|v| equal(b, v)))
            .collect(),
    });
}

fn names(value: &Value, path: &str) -> Result<Vec<String>, SchemaError> {
    let items = value.as_array().ok_or_else(|| SchemaError {
        path: path.to_owned(),
        problem: "must be a list of names".to_owned(),
    })?;
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let name = item.as_str().ok_or_else(|| SchemaError {
            path: path.to_owned(),
            problem: "must be a list of names".to_owned(),
        })?;
        if out.iter().any(|n| n == name) {
            return fail(path, format!("names {name:?} twice"));
        }
        out.push(name.to_owned());
    }
    Ok(out)
}

fn scalar(value: &Value, path: &str) -> Result<(), SchemaError> {
    match value {
        Value::String(_) | Value::Bool(_) => Ok(()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(()),
        _ => fail(
            path,
            "only strings, integers and true/false are implemented here",
        ),
    }
}

fn count(value: &Value, path: &str) -> Result<u64, SchemaError> {
    value.as_u64().ok_or_else(|| SchemaError {
        path: path.to_owned(),
        problem: "must be a whole number, 0 or more".to_owned(),
    })
}

fn bound(value: &Value, path: &str) -> Result<i128, SchemaError> {
    value
        .as_i64()
        .map(i128::from)
        .or_else(|| value.as_u64().map(i128::from))
        .ok_or_else(|| SchemaError {
            path: path.to_owned(),
            problem: "must be an integer".to_owned(),
        })
}

/// JSON equality for the scalars `enum` and `const` may hold: numbers compare by value, so
/// `1.0` equals `1` as JSON Schema requires.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        _ => a == b,
    }
}

/// Exact order of two JSON numbers (integers up to 64 bits or finite floats).
fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (integer_of(a), integer_of(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => b.as_f64().map(|f| compare_float(f, x).reverse()),
        (None, Some(y)) => a.as_f64().map(|f| compare_float(f, y)),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn integer_of(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Where the float `f` lies relative to the integer `n` (|n| < 2^64), without the rounding a
/// conversion of `n` to a float would bring.
fn compare_float(f: f64, n: i128) -> Ordering {
    // Every finite float beyond ±2^65 is beyond every 64-bit integer.
    const LIMIT: f64 = 36_893_488_147_419_103_232.0; // 2^65
    if f >= LIMIT {
        return Ordering::Greater;
    }
    if f <= -LIMIT {
        return Ordering::Less;
    }
    let whole = f.floor();
    // Exact: `whole` is integral and within ±2^65.
    let whole_int = whole as i128;
    match whole_int.cmp(&n) {
        Ordering::Equal if f > whole => Ordering::Greater,
        other => other,
    }
}

fn compare_to_bound(value: &Number, bound: i128) -> Ordering {
    match integer_of(value) {
        Some(x) => x.cmp(&bound),
        None => value
            .as_f64()
            .map_or(Ordering::Equal, |f| compare_float(f, bound)),
    }
}

impl Node {
    fn check(&self, value: &Value, path: &mut Vec<String>) -> Result<(), Problem> {
        match self {
            Node::Nothing => Err(Problem::Forbidden),
            Node::Rules(rules) => rules.check(value, path),
        }
    }
}

impl Rules {
    fn check(&self, value: &Value, path: &mut Vec<String>) -> Result<(), Problem> {
        if let Some(kind) = self.kind
            && !kind.admits(value)
        {
            return Err(Problem::Type(kind));
        }
        if let Some(allowed) = &self.one_of
            && !allowed.iter().any(|a| equal(a, value))
        {
            return Err(Problem::NotAllowedValue);
        }
        match value {
            Value::Object(object) => self.check_object(object, path),
            Value::Array(items) => self.check_array(items, path),
            Value::String(text) => self.check_string(text),
            Value::Number(n) => self.check_number(n),
            Value::Bool(_) | Value::Null => Ok(()),
        }
    }

    fn check_object(
        &self,
        object: &Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<(), Problem> {
        for name in &self.required {
            if !object.contains_key(name) {
                return Err(Problem::Required(name.clone()));
            }
        }
        if self.closed
            && let Some(extra) = object
                .keys()
                .find(|k| !self.properties.iter().any(|(name, _)| name == *k))
        {
            return Err(Problem::Unexpected(extra.clone()));
        }
        for (name, sub) in &self.properties {
            if let Some(member) = object.get(name) {
                path.push(name.clone());
                sub.check(member, path)?;
                path.pop();
            }
        }
        Ok(())
    }

    fn check_array(&self, items: &[Value], path: &mut Vec<String>) -> Result<(), Problem> {
        let len = u64::try_from(items.len()).unwrap_or(u64::MAX);
        if let Some(min) = self.min_items
            && len < min
        {
            return Err(Problem::TooFewItems(min));
        }
        if let Some(max) = self.max_items
            && len > max
        {
            return Err(Problem::TooManyItems(max));
        }
        if let Some(sub) = &self.items {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                sub.check(item, path)?;
                path.pop();
            }
        }
        Ok(())
    }

    fn check_string(&self, text: &str) -> Result<(), Problem> {
        // Length before pattern: a value far too long is refused without being walked.
        let len = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
        if let Some(max) = self.max_length
            && len > max
        {
            return Err(Problem::TooLong(max));
        }
        if let Some(min) = self.min_length
            && len < min
        {
            return Err(Problem::TooShort(min));
        }
        if let Some(pattern) = &self.pattern
            && !pattern.is_match(text)
        {
            return Err(Problem::Pattern);
        }
        Ok(())
    }

    fn check_number(&self, n: &Number) -> Result<(), Problem> {
        if let Some(min) = self.minimum
            && compare_to_bound(n, min) == Ordering::Less
        {
            return Err(Problem::BelowMinimum(min));
        }
        if let Some(max) = self.maximum
            && compare_to_bound(n, max) == Ordering::Greater
        {
            return Err(Problem::AboveMaximum(max));
        }
        Ok(())
    }
}
