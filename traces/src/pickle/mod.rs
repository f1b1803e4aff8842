//! A Python pickle reader that never executes anything.
//!
//! [`parse`] interprets the opcodes of protocols 0 to 5 as a stack machine that only builds
//! values: `GLOBAL`/`STACK_GLOBAL` produce a [`Value::Global`] name (checked against an
//! allow-list of modules), and `REDUCE`/`NEWOBJ`/`BUILD` produce [`Value::Object`] records
//! that keep the callable, its arguments and its state. Values live in an arena ([`Pickle`])
//! and refer to each other by [`Id`], so shared (memoized) and even cyclic values cost nothing
//! and nothing recurses while parsing. Byte strings borrow from the input (zero-copy).

mod vm;

use std::borrow::Cow;

pub use vm::{parse, parse_with, Limits};

/// Index of a value in [`Pickle::values`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Id(pub u32);

/// How an object was constructed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Construct {
    /// `REDUCE`: `callable(*args)`.
    Reduce,
    /// `NEWOBJ` / `NEWOBJ_EX` / `OBJ` / `INST`: `cls.__new__(cls, *args)`.
    New,
}

/// A pickled value. Containers hold [`Id`]s into the arena.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    None,
    Bool(bool),
    Int(i64),
    /// An integer that does not fit i64: little-endian two's complement bytes.
    BigInt(Vec<u8>),
    Float(f64),
    Str(Cow<'a, str>),
    Bytes(&'a [u8]),
    /// Bytes built by a reducer (`_codecs.encode`, protocol 2) rather than borrowed.
    OwnedBytes(Vec<u8>),
    List(Vec<Id>),
    Tuple(Vec<Id>),
    Dict(Vec<(Id, Id)>),
    Set(Vec<Id>),
    FrozenSet(Vec<Id>),
    /// A module-level name (a class or function), never resolved.
    Global {
        module: Cow<'a, str>,
        name: Cow<'a, str>,
    },
    /// `callable(*args)` or `cls.__new__(cls, *args)`, plus what `BUILD`/`APPENDS`/`SETITEMS`
    /// added afterwards.
    Object {
        callable: Id,
        args: Vec<Id>,
        kwargs: Option<Id>,
        how: Construct,
        state: Option<Id>,
        /// Items appended to an object that is list-like (e.g. a list subclass).
        items: Vec<Id>,
        /// Key/value pairs set on an object that is dict-like.
        entries: Vec<(Id, Id)>,
    },
}

/// A parsed pickle: the value arena and the root value.
#[derive(Debug, Clone)]
pub struct Pickle<'a> {
    pub values: Vec<Value<'a>>,
    pub root: Id,
    /// Highest protocol seen in a `PROTO` opcode (0 if none).
    pub protocol: u8,
    /// Non-fatal notes (unknown but allowed classes, ...).
    pub warnings: Vec<String>,
}

impl<'a> Pickle<'a> {
    pub fn get(&self, id: Id) -> &Value<'a> {
        // Ids are only created by the VM for values it pushed, so they are always in range.
        self.values.get(id.0 as usize).unwrap_or(&Value::None)
    }

    pub fn root(&self) -> &Value<'a> {
        self.get(self.root)
    }

    /// `(module, name)` of a global value.
    pub fn global_name(&self, id: Id) -> Option<(&str, &str)> {
        match self.get(id) {
            Value::Global { module, name } => Some((module, name)),
            _ => None,
        }
    }

    /// `module.name` of the class/callable of an object, if it is a plain global.
    pub fn class_of(&self, id: Id) -> Option<(&str, &str)> {
        match self.get(id) {
            Value::Object { callable, .. } => self.global_name(*callable),
            _ => None,
        }
    }

    pub fn as_str(&self, id: Id) -> Option<&str> {
        match self.get(id) {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_int(&self, id: Id) -> Option<i64> {
        match self.get(id) {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            Value::BigInt(b) => bigint_to_i128(b).and_then(|v| i64::try_from(v).ok()),
            _ => None,
        }
    }

    /// Integers up to 128 bits (base addresses are written as `LONG1`).
    pub fn as_i128(&self, id: Id) -> Option<i128> {
        match self.get(id) {
            Value::Int(i) => Some(*i as i128),
            Value::Bool(b) => Some(*b as i128),
            Value::BigInt(b) => bigint_to_i128(b),
            _ => None,
        }
    }

    pub fn as_bytes(&self, id: Id) -> Option<&[u8]> {
        match self.get(id) {
            Value::Bytes(b) => Some(b),
            Value::OwnedBytes(b) => Some(b),
            _ => None,
        }
    }

    /// Elements of a list or tuple.
    pub fn as_seq(&self, id: Id) -> Option<&[Id]> {
        match self.get(id) {
            Value::List(v) | Value::Tuple(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_dict(&self, id: Id) -> Option<&[(Id, Id)]> {
        match self.get(id) {
            Value::Dict(v) => Some(v),
            _ => None,
        }
    }

    /// Value of a string key in a dict.
    pub fn dict_get(&self, dict: Id, key: &str) -> Option<Id> {
        self.as_dict(dict)?
            .iter()
            .find(|(k, _)| self.as_str(*k) == Some(key))
            .map(|(_, v)| *v)
    }

    /// The field map of an object: its `BUILD` state dict, or the second element of a
    /// `(dict, slots)` state tuple.
    pub fn object_field(&self, obj: Id, field: &str) -> Option<Id> {
        let Value::Object {
            state: Some(state), ..
        } = self.get(obj)
        else {
            return None;
        };
        match self.get(*state) {
            Value::Dict(_) => self.dict_get(*state, field),
            Value::Tuple(t) => t.iter().find_map(|s| self.dict_get(*s, field)),
            _ => None,
        }
    }

    pub fn object_args(&self, obj: Id) -> &[Id] {
        match self.get(obj) {
            Value::Object { args, .. } => args,
            _ => &[],
        }
    }
}

/// Little-endian two's complement to i128 (`None` if wider).
pub fn bigint_to_i128(b: &[u8]) -> Option<i128> {
    if b.is_empty() {
        return Some(0);
    }
    let neg = b.last().is_some_and(|&x| x & 0x80 != 0);
    // Drop redundant sign-extension bytes before checking the width.
    let mut len = b.len();
    while len > 1 && b[len - 1] == if neg { 0xFF } else { 0 } && ((b[len - 2] & 0x80 != 0) == neg) {
        len -= 1;
    }
    if len > 16 {
        return None;
    }
    let mut buf = [if neg { 0xFFu8 } else { 0 }; 16];
    buf[..len].copy_from_slice(&b[..len]);
    Some(i128::from_le_bytes(buf))
}

/// Decimal text of a little-endian two's-complement integer of any width.
pub fn bigint_to_string(b: &[u8]) -> String {
    if let Some(v) = bigint_to_i128(b) {
        return v.to_string();
    }
    let neg = b.last().is_some_and(|&x| x & 0x80 != 0);
    // Magnitude as little-endian bytes.
    let mut mag: Vec<u8> = b.to_vec();
    if neg {
        let mut carry = true;
        for x in mag.iter_mut() {
            *x = !*x;
            if carry {
                let (v, c) = x.overflowing_add(1);
                *x = v;
                carry = c;
            }
        }
    }
    // Repeated division by 10 (inputs are bounded by the reader's length limit).
    let mut digits = Vec::new();
    while mag.iter().any(|&x| x != 0) {
        let mut rem = 0u32;
        for x in mag.iter_mut().rev() {
            let cur = (rem << 8) | *x as u32;
            *x = (cur / 10) as u8;
            rem = cur % 10;
        }
        digits.push(b'0' + rem as u8);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    if neg {
        digits.push(b'-');
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

/// Why a pickle could not be read. Every variant names the byte offset of the opcode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PickleError {
    #[error("pickle truncated at offset {offset}: {what} needs {needed} more bytes")]
    Truncated {
        offset: usize,
        what: &'static str,
        needed: usize,
    },
    #[error("unknown pickle opcode 0x{opcode:02x} at offset {offset}")]
    UnknownOpcode { offset: usize, opcode: u8 },
    #[error("unsupported pickle opcode {name} at offset {offset}: {why}")]
    Unsupported {
        offset: usize,
        name: &'static str,
        why: &'static str,
    },
    #[error("pickle stack underflow at offset {offset} ({op})")]
    StackUnderflow { offset: usize, op: &'static str },
    #[error("pickle opcode {op} at offset {offset} needs a MARK but there is none")]
    NoMark { offset: usize, op: &'static str },
    #[error("bad operand for {op} at offset {offset}: {why}")]
    BadOperand {
        offset: usize,
        op: &'static str,
        why: String,
    },
    #[error("memo key {key} not found at offset {offset}")]
    MissingMemo { offset: usize, key: u64 },
    #[error("global {module}.{name} at offset {offset} is not in the allow-list; refusing to read this pickle")]
    ForbiddenGlobal {
        offset: usize,
        module: String,
        name: String,
    },
    #[error("pickle limit exceeded at offset {offset}: {what} (limit {limit})")]
    Limit {
        offset: usize,
        what: &'static str,
        limit: usize,
    },
    #[error("pickle ended at offset {offset} without STOP")]
    NoStop { offset: usize },
    #[error("pickle STOP at offset {offset} with {depth} values on the stack (expected 1)")]
    BadStop { offset: usize, depth: usize },
}

impl PickleError {
    pub fn offset(&self) -> usize {
        match self {
            PickleError::Truncated { offset, .. }
            | PickleError::UnknownOpcode { offset, .. }
            | PickleError::Unsupported { offset, .. }
            | PickleError::StackUnderflow { offset, .. }
            | PickleError::NoMark { offset, .. }
            | PickleError::BadOperand { offset, .. }
            | PickleError::MissingMemo { offset, .. }
            | PickleError::ForbiddenGlobal { offset, .. }
            | PickleError::Limit { offset, .. }
            | PickleError::NoStop { offset }
            | PickleError::BadStop { offset, .. } => *offset,
        }
    }
}

/// Modules whose names may appear in `GLOBAL`/`STACK_GLOBAL`. Everything is only *named*,
/// never imported or called; the list exists so a pickle built to run code (`os.system`,
/// `builtins.eval`, `subprocess.Popen`, ...) is rejected loudly instead of being read.
pub fn global_allowed(module: &str, name: &str) -> bool {
    const MODULE_PREFIXES: &[&str] = &["tinygrad.", "extra.", "test."];
    const EXACT: &[(&str, &str)] = &[
        ("decimal", "Decimal"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "bytearray"),
        ("builtins", "bytes"),
        ("builtins", "complex"),
        ("builtins", "slice"),
        ("builtins", "range"),
        ("builtins", "object"),
        ("builtins", "list"),
        ("builtins", "dict"),
        ("builtins", "tuple"),
        ("builtins", "int"),
        ("builtins", "float"),
        ("builtins", "str"),
        ("__builtin__", "set"),
        ("__builtin__", "frozenset"),
        ("__builtin__", "bytearray"),
        ("__builtin__", "object"),
        ("__builtin__", "complex"),
        ("_codecs", "encode"),
        ("copyreg", "_reconstructor"),
        ("copy_reg", "_reconstructor"),
        ("collections", "OrderedDict"),
        ("collections", "defaultdict"),
        ("collections", "deque"),
        ("enum", "Enum"),
        ("datetime", "datetime"),
        ("datetime", "timedelta"),
        ("fractions", "Fraction"),
        ("pathlib", "PosixPath"),
        ("pathlib", "Path"),
        ("functools", "partial"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"),
    ];
    MODULE_PREFIXES
        .iter()
        .any(|p| module == p.trim_end_matches('.') || module.starts_with(p))
        || EXACT.iter().any(|(m, n)| *m == module && *n == name)
}
