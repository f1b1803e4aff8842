//! The opcode interpreter behind [`parse`](super::parse).

use std::borrow::Cow;
use std::collections::HashMap;

use super::{global_allowed, Construct, Id, Pickle, PickleError, Value};
use crate::bytes::{self, Reader};

/// Resource limits for hostile input. Lengths are also always checked against the bytes left.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Values on the stack at once.
    pub max_stack: usize,
    /// Open `MARK`s at once (nesting depth of tuples/lists/dicts being built).
    pub max_marks: usize,
    /// Entries in the memo.
    pub max_memo: usize,
    /// Bytes of one text-protocol line or one `LONG4` integer.
    pub max_text: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_stack: 1 << 24,
            max_marks: 4096,
            max_memo: 1 << 26,
            max_text: 1 << 20,
        }
    }
}

/// Parses a pickle with default [`Limits`].
pub fn parse(data: &[u8]) -> Result<Pickle<'_>, PickleError> {
    parse_with(data, Limits::default())
}

pub fn parse_with(data: &[u8], limits: Limits) -> Result<Pickle<'_>, PickleError> {
    Vm {
        input: Reader::new(data),
        op_start: 0,
        limits,
        values: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        protocol: 0,
        warnings: Vec::new(),
    }
    .run()
}

struct Vm<'a> {
    input: Reader<'a>,
    op_start: usize,
    limits: Limits,
    values: Vec<Value<'a>>,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: HashMap<u64, Id>,
    protocol: u8,
    warnings: Vec<String>,
}

type R<T> = Result<T, PickleError>;

impl<'a> Vm<'a> {
    fn run(mut self) -> R<Pickle<'a>> {
        loop {
            self.op_start = self.input.position();
            let Ok(op) = self.input.u8("opcode") else {
                return Err(PickleError::NoStop {
                    offset: self.op_start,
                });
            };
            if op == b'.' {
                // STOP
                if self.stack.len() != 1 || !self.marks.is_empty() {
                    return Err(PickleError::BadStop {
                        offset: self.op_start,
                        depth: self.stack.len(),
                    });
                }
                let root = self.stack[0];
                return Ok(Pickle {
                    values: self.values,
                    root,
                    protocol: self.protocol,
                    warnings: self.warnings,
                });
            }
            self.step(op)?;
        }
    }

    // ---- input ----

    /// A short read: errors point at the opcode that wanted the bytes.
    fn short(&self, e: bytes::Error) -> PickleError {
        PickleError::Truncated {
            offset: self.op_start,
            what: e.what,
            needed: usize::try_from(e.needed - e.available).unwrap_or(usize::MAX),
        }
    }

    fn take(&mut self, n: usize, what: &'static str) -> R<&'a [u8]> {
        self.input.slice(n, what).map_err(|e| self.short(e))
    }

    fn arr<const N: usize>(&mut self, what: &'static str) -> R<[u8; N]> {
        self.input.array(what).map_err(|e| self.short(e))
    }

    fn u8(&mut self, what: &'static str) -> R<u8> {
        self.input.u8(what).map_err(|e| self.short(e))
    }
    fn u16(&mut self, what: &'static str) -> R<u16> {
        self.input.u16(what).map_err(|e| self.short(e))
    }
    fn u32(&mut self, what: &'static str) -> R<u32> {
        self.input.u32(what).map_err(|e| self.short(e))
    }
    fn u64(&mut self, what: &'static str) -> R<u64> {
        self.input.u64(what).map_err(|e| self.short(e))
    }

    fn len64(&mut self, what: &'static str) -> R<usize> {
        let n = self.u64(what)?;
        // A length larger than the input is reported as truncation by `take`.
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// A text-protocol line without its `\n`.
    fn line(&mut self, what: &'static str) -> R<&'a [u8]> {
        let rest = self.input.rest();
        let limit = rest.len().min(self.limits.max_text + 1);
        match rest[..limit].iter().position(|&b| b == b'\n') {
            Some(i) => {
                self.input.skip(i + 1, what).map_err(|e| self.short(e))?;
                Ok(&rest[..i])
            }
            None if limit > self.limits.max_text => Err(PickleError::Limit {
                offset: self.op_start,
                what: "text line length",
                limit: self.limits.max_text,
            }),
            None => Err(PickleError::Truncated {
                offset: self.op_start,
                what,
                needed: 1,
            }),
        }
    }

    fn bad(&self, op: &'static str, why: impl Into<String>) -> PickleError {
        PickleError::BadOperand {
            offset: self.op_start,
            op,
            why: why.into(),
        }
    }

    // ---- stack ----

    fn new_value(&mut self, v: Value<'a>) -> Id {
        self.values.push(v);
        Id((self.values.len() - 1) as u32)
    }

    fn push_id(&mut self, id: Id) -> R<()> {
        if self.stack.len() >= self.limits.max_stack {
            return Err(PickleError::Limit {
                offset: self.op_start,
                what: "stack depth",
                limit: self.limits.max_stack,
            });
        }
        self.stack.push(id);
        Ok(())
    }

    fn push(&mut self, v: Value<'a>) -> R<()> {
        if self.values.len() >= u32::MAX as usize {
            return Err(PickleError::Limit {
                offset: self.op_start,
                what: "value count",
                limit: u32::MAX as usize,
            });
        }
        let id = self.new_value(v);
        self.push_id(id)
    }

    fn pop(&mut self, op: &'static str) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(PickleError::StackUnderflow {
                offset: self.op_start,
                op,
            });
        }
        self.stack.pop().ok_or(PickleError::StackUnderflow {
            offset: self.op_start,
            op,
        })
    }

    fn top(&self, op: &'static str) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(PickleError::StackUnderflow {
                offset: self.op_start,
                op,
            });
        }
        self.stack
            .last()
            .copied()
            .ok_or(PickleError::StackUnderflow {
                offset: self.op_start,
                op,
            })
    }

    fn pop_mark(&mut self, op: &'static str) -> R<Vec<Id>> {
        let m = self.marks.pop().ok_or(PickleError::NoMark {
            offset: self.op_start,
            op,
        })?;
        Ok(self.stack.split_off(m.min(self.stack.len())))
    }

    fn memo_put(&mut self, key: u64) -> R<()> {
        let id = self.top("PUT")?;
        if self.memo.len() >= self.limits.max_memo && !self.memo.contains_key(&key) {
            return Err(PickleError::Limit {
                offset: self.op_start,
                what: "memo entries",
                limit: self.limits.max_memo,
            });
        }
        self.memo.insert(key, id);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> R<()> {
        let id = *self.memo.get(&key).ok_or(PickleError::MissingMemo {
            offset: self.op_start,
            key,
        })?;
        self.push_id(id)
    }

    fn value_mut(&mut self, id: Id) -> &mut Value<'a> {
        // Ids come from `new_value`, so they are in range.
        &mut self.values[id.0 as usize]
    }

    fn str_of(&self, id: Id) -> Option<Cow<'a, str>> {
        match self.values.get(id.0 as usize) {
            Some(Value::Str(s)) => Some(s.clone()),
            _ => None,
        }
    }

    // ---- opcodes ----

    fn global(&mut self, module: Cow<'a, str>, name: Cow<'a, str>) -> R<()> {
        if !global_allowed(&module, &name) {
            return Err(PickleError::ForbiddenGlobal {
                offset: self.op_start,
                module: module.into_owned(),
                name: name.into_owned(),
            });
        }
        self.push(Value::Global { module, name })
    }

    fn add_items(&mut self, target: Id, items: Vec<Id>, op: &'static str) -> R<()> {
        match self.value_mut(target) {
            Value::List(v) | Value::Set(v) => v.extend(items),
            Value::Object { items: v, .. } => v.extend(items),
            _ => return Err(self.bad(op, "target is not a list, set or object")),
        }
        Ok(())
    }

    fn set_items(&mut self, target: Id, kv: Vec<Id>, op: &'static str) -> R<()> {
        if !kv.len().is_multiple_of(2) {
            return Err(self.bad(op, "odd number of items"));
        }
        let pairs = kv.chunks_exact(2).map(|c| (c[0], c[1]));
        match self.value_mut(target) {
            Value::Dict(v) => v.extend(pairs),
            Value::Object { entries, .. } => entries.extend(pairs),
            _ => return Err(self.bad(op, "target is not a dict or object")),
        }
        Ok(())
    }

    /// `REDUCE` of a few pure-data builtins is interpreted; everything else is recorded.
    fn reduce(&mut self, callable: Id, args: Id) -> R<()> {
        let arg_ids: Vec<Id> = match self.values.get(args.0 as usize) {
            Some(Value::Tuple(t)) => t.clone(),
            _ => return Err(self.bad("REDUCE", "arguments are not a tuple")),
        };
        if let Some(Value::Global { module, name }) = self.values.get(callable.0 as usize) {
            let key = (module.as_ref(), name.as_ref());
            let first = arg_ids.first().and_then(|a| self.values.get(a.0 as usize));
            match (key, first) {
                // Protocol 2/3 bytes: _codecs.encode(text, 'latin1').
                (("_codecs", "encode"), Some(Value::Str(s))) => {
                    let mut out = Vec::with_capacity(s.len());
                    for c in s.chars() {
                        out.push(u8::try_from(c as u32).map_err(|_| {
                            self.bad("REDUCE", "_codecs.encode of a non-latin1 string")
                        })?);
                    }
                    return self.push(Value::OwnedBytes(out));
                }
                (("builtins" | "__builtin__", "bytearray"), Some(Value::Bytes(b))) => {
                    let b = *b;
                    return self.push(Value::Bytes(b));
                }
                (("builtins" | "__builtin__", "bytearray"), None) => {
                    return self.push(Value::Bytes(&[]))
                }
                (("builtins" | "__builtin__", "set" | "frozenset"), f) => {
                    let items = match f {
                        Some(
                            Value::List(v) | Value::Tuple(v) | Value::Set(v) | Value::FrozenSet(v),
                        ) => v.clone(),
                        None => Vec::new(),
                        Some(_) => return Err(self.bad("REDUCE", "set() of a non-sequence")),
                    };
                    let v = if key.1 == "set" {
                        Value::Set(items)
                    } else {
                        Value::FrozenSet(items)
                    };
                    return self.push(v);
                }
                _ => {}
            }
        }
        self.push(Value::Object {
            callable,
            args: arg_ids,
            kwargs: None,
            how: Construct::Reduce,
            state: None,
            items: Vec::new(),
            entries: Vec::new(),
        })
    }

    fn new_obj(&mut self, cls: Id, args: Vec<Id>, kwargs: Option<Id>) -> R<()> {
        self.push(Value::Object {
            callable: cls,
            args,
            kwargs,
            how: Construct::New,
            state: None,
            items: Vec::new(),
            entries: Vec::new(),
        })
    }

    fn text_int(&mut self, line: &[u8], op: &'static str) -> R<Value<'a>> {
        let s = std::str::from_utf8(line)
            .map_err(|_| self.bad(op, "not ASCII"))?
            .trim();
        let s = s.strip_suffix('L').unwrap_or(s);
        if op == "INT" && s == "01" {
            return Ok(Value::Bool(true));
        }
        if op == "INT" && s == "00" {
            return Ok(Value::Bool(false));
        }
        if let Ok(v) = s.parse::<i64>() {
            return Ok(Value::Int(v));
        }
        let v: i128 = s
            .parse()
            .map_err(|_| self.bad(op, format!("not an integer: {s:?}")))?;
        Ok(Value::BigInt(v.to_le_bytes().to_vec()))
    }

    fn step(&mut self, op: u8) -> R<()> {
        match op {
            0x80 => {
                // PROTO
                let p = self.u8("protocol")?;
                if p > 5 {
                    return Err(self.bad("PROTO", format!("unsupported protocol {p}")));
                }
                self.protocol = self.protocol.max(p);
            }
            0x95 => {
                // FRAME: only a read-ahead hint; check it is not longer than the data.
                let n = self.len64("frame length")?;
                let left = self.input.remaining();
                if n > left {
                    return Err(PickleError::Truncated {
                        offset: self.op_start,
                        what: "frame",
                        needed: n - left,
                    });
                }
            }
            b'(' => {
                if self.marks.len() >= self.limits.max_marks {
                    return Err(PickleError::Limit {
                        offset: self.op_start,
                        what: "MARK nesting",
                        limit: self.limits.max_marks,
                    });
                }
                self.marks.push(self.stack.len());
            }
            b'0' => {
                self.pop("POP")?;
            }
            b'1' => {
                self.pop_mark("POP_MARK")?;
            }
            b'2' => {
                let t = self.top("DUP")?;
                self.push_id(t)?;
            }
            // ---- scalars ----
            b'N' => self.push(Value::None)?,
            0x88 => self.push(Value::Bool(true))?,
            0x89 => self.push(Value::Bool(false))?,
            b'J' => {
                let v = self.input.i32("BININT").map_err(|e| self.short(e))?;
                self.push(Value::Int(v as i64))?
            }
            b'K' => {
                let v = self.u8("BININT1")?;
                self.push(Value::Int(v as i64))?
            }
            b'M' => {
                let v = self.u16("BININT2")?;
                self.push(Value::Int(v as i64))?
            }
            0x8a | 0x8b => {
                let n = if op == 0x8a {
                    self.u8("LONG1 length")? as usize
                } else {
                    self.u32("LONG4 length")? as usize
                };
                if n > self.limits.max_text {
                    return Err(PickleError::Limit {
                        offset: self.op_start,
                        what: "LONG4 length",
                        limit: self.limits.max_text,
                    });
                }
                let b = self.take(n, "LONG bytes")?;
                let v = match super::bigint_to_i128(b).and_then(|v| i64::try_from(v).ok()) {
                    Some(v) => Value::Int(v),
                    None => Value::BigInt(b.to_vec()),
                };
                self.push(v)?
            }
            b'I' | b'L' => {
                let name = if op == b'I' { "INT" } else { "LONG" };
                let line = self.line(name)?;
                let v = self.text_int(line, name)?;
                self.push(v)?
            }
            b'G' => {
                let v = f64::from_be_bytes(self.arr("BINFLOAT")?);
                self.push(Value::Float(v))?
            }
            b'F' => {
                let line = self.line("FLOAT")?;
                let s = std::str::from_utf8(line).map_err(|_| self.bad("FLOAT", "not ASCII"))?;
                let v: f64 = s
                    .trim()
                    .parse()
                    .map_err(|_| self.bad("FLOAT", format!("not a float: {s:?}")))?;
                self.push(Value::Float(v))?
            }
            // ---- strings and bytes ----
            0x8c | b'X' | 0x8d => {
                let n = match op {
                    0x8c => self.u8("SHORT_BINUNICODE length")? as usize,
                    b'X' => self.u32("BINUNICODE length")? as usize,
                    _ => self.len64("BINUNICODE8 length")?,
                };
                let b = self.take(n, "string")?;
                // Python writes lone surrogates with surrogatepass; keep those lossy.
                let s = match std::str::from_utf8(b) {
                    Ok(s) => Cow::Borrowed(s),
                    Err(_) => Cow::Owned(String::from_utf8_lossy(b).into_owned()),
                };
                self.push(Value::Str(s))?
            }
            b'V' => {
                let line = self.line("UNICODE")?;
                let s =
                    raw_unicode_escape(line).ok_or_else(|| self.bad("UNICODE", "bad escape"))?;
                self.push(Value::Str(Cow::Owned(s)))?
            }
            b'U' | b'T' => {
                let n = if op == b'U' {
                    self.u8("SHORT_BINSTRING length")? as usize
                } else {
                    self.u32("BINSTRING length")? as usize
                };
                let b = self.take(n, "string")?;
                // Python 2 str: read as latin-1 text (what `encoding='latin1'` gives).
                self.push(Value::Str(Cow::Owned(
                    b.iter().map(|&c| c as char).collect(),
                )))?
            }
            b'S' => {
                let line = self.line("STRING")?;
                let s = python_string_literal(line)
                    .ok_or_else(|| self.bad("STRING", "not a quoted string"))?;
                self.push(Value::Str(Cow::Owned(s)))?
            }
            b'C' | b'B' | 0x8e | 0x96 => {
                let n = match op {
                    b'C' => self.u8("SHORT_BINBYTES length")? as usize,
                    b'B' => self.u32("BINBYTES length")? as usize,
                    0x8e => self.len64("BINBYTES8 length")?,
                    _ => self.len64("BYTEARRAY8 length")?,
                };
                let b = self.take(n, "bytes")?;
                self.push(Value::Bytes(b))?
            }
            // ---- containers ----
            b']' => self.push(Value::List(Vec::new()))?,
            b')' => self.push(Value::Tuple(Vec::new()))?,
            b'}' => self.push(Value::Dict(Vec::new()))?,
            0x8f => self.push(Value::Set(Vec::new()))?,
            b'l' => {
                let items = self.pop_mark("LIST")?;
                self.push(Value::List(items))?
            }
            b't' => {
                let items = self.pop_mark("TUPLE")?;
                self.push(Value::Tuple(items))?
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.pop("TUPLEn")?);
                }
                items.reverse();
                self.push(Value::Tuple(items))?
            }
            b'd' => {
                let kv = self.pop_mark("DICT")?;
                if !kv.len().is_multiple_of(2) {
                    return Err(self.bad("DICT", "odd number of items"));
                }
                let pairs = kv.chunks_exact(2).map(|c| (c[0], c[1])).collect();
                self.push(Value::Dict(pairs))?
            }
            0x91 => {
                let items = self.pop_mark("FROZENSET")?;
                self.push(Value::FrozenSet(items))?
            }
            b'a' => {
                let v = self.pop("APPEND")?;
                let t = self.top("APPEND")?;
                self.add_items(t, vec![v], "APPEND")?;
            }
            b'e' | 0x90 => {
                let name = if op == b'e' { "APPENDS" } else { "ADDITEMS" };
                let items = self.pop_mark(name)?;
                let t = self.top(name)?;
                self.add_items(t, items, name)?;
            }
            b's' => {
                let v = self.pop("SETITEM")?;
                let k = self.pop("SETITEM")?;
                let t = self.top("SETITEM")?;
                self.set_items(t, vec![k, v], "SETITEM")?;
            }
            b'u' => {
                let kv = self.pop_mark("SETITEMS")?;
                let t = self.top("SETITEMS")?;
                self.set_items(t, kv, "SETITEMS")?;
            }
            // ---- memo ----
            b'p' => {
                let line = self.line("PUT")?;
                let key = parse_decimal(line).ok_or_else(|| self.bad("PUT", "bad memo key"))?;
                self.memo_put(key)?;
            }
            b'q' => {
                let k = self.u8("BINPUT")? as u64;
                self.memo_put(k)?;
            }
            b'r' => {
                let k = self.u32("LONG_BINPUT")? as u64;
                self.memo_put(k)?;
            }
            0x94 => {
                let k = self.memo.len() as u64;
                self.memo_put(k)?;
            }
            b'g' => {
                let line = self.line("GET")?;
                let key = parse_decimal(line).ok_or_else(|| self.bad("GET", "bad memo key"))?;
                self.memo_get(key)?;
            }
            b'h' => {
                let k = self.u8("BINGET")? as u64;
                self.memo_get(k)?;
            }
            b'j' => {
                let k = self.u32("LONG_BINGET")? as u64;
                self.memo_get(k)?;
            }
            // ---- classes and objects (recorded, never called) ----
            b'c' => {
                let m = self.line("GLOBAL module")?;
                let n = self.line("GLOBAL name")?;
                let (m, n) = (latin1(m), latin1(n));
                self.global(m, n)?;
            }
            0x93 => {
                let name = self.pop("STACK_GLOBAL")?;
                let module = self.pop("STACK_GLOBAL")?;
                let (Some(m), Some(n)) = (self.str_of(module), self.str_of(name)) else {
                    return Err(self.bad("STACK_GLOBAL", "module and name must be strings"));
                };
                self.global(m, n)?;
            }
            b'i' => {
                let m = self.line("INST module")?;
                let n = self.line("INST name")?;
                let (m, n) = (latin1(m), latin1(n));
                let args = self.pop_mark("INST")?;
                self.global(m, n)?;
                let cls = self.pop("INST")?;
                self.new_obj(cls, args, None)?;
            }
            b'o' => {
                let mut items = self.pop_mark("OBJ")?;
                if items.is_empty() {
                    return Err(PickleError::StackUnderflow {
                        offset: self.op_start,
                        op: "OBJ",
                    });
                }
                let cls = items.remove(0);
                self.new_obj(cls, items, None)?;
            }
            b'R' => {
                let args = self.pop("REDUCE")?;
                let callable = self.pop("REDUCE")?;
                self.reduce(callable, args)?;
            }
            0x81 | 0x92 => {
                let name = if op == 0x81 { "NEWOBJ" } else { "NEWOBJ_EX" };
                let kwargs = if op == 0x92 {
                    Some(self.pop(name)?)
                } else {
                    None
                };
                let args = self.pop(name)?;
                let cls = self.pop(name)?;
                let args = match self.values.get(args.0 as usize) {
                    Some(Value::Tuple(t)) => t.clone(),
                    _ => return Err(self.bad(name, "arguments are not a tuple")),
                };
                self.new_obj(cls, args, kwargs)?;
            }
            b'b' => {
                let st = self.pop("BUILD")?;
                let t = self.top("BUILD")?;
                match self.value_mut(t) {
                    Value::Object { state, .. } => *state = Some(st),
                    _ => return Err(self.bad("BUILD", "target is not an object")),
                }
            }
            b'P' | b'Q' => {
                return Err(PickleError::Unsupported {
                    offset: self.op_start,
                    name: "PERSID",
                    why: "persistent ids need the writer's resolver",
                })
            }
            0x82..=0x84 => {
                return Err(PickleError::Unsupported {
                    offset: self.op_start,
                    name: "EXT",
                    why: "the copyreg extension registry is not available",
                })
            }
            0x97 | 0x98 => {
                return Err(PickleError::Unsupported {
                    offset: self.op_start,
                    name: "NEXT_BUFFER",
                    why: "out-of-band buffers are not part of the file",
                })
            }
            _ => {
                return Err(PickleError::UnknownOpcode {
                    offset: self.op_start,
                    opcode: op,
                })
            }
        }
        Ok(())
    }
}

fn latin1(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(b.iter().map(|&c| c as char).collect()),
    }
}

fn parse_decimal(line: &[u8]) -> Option<u64> {
    std::str::from_utf8(line).ok()?.trim().parse().ok()
}

/// Decodes Python's `raw-unicode-escape` (`\uXXXX`, `\UXXXXXXXX`, everything else latin-1).
fn raw_unicode_escape(b: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() && (b[i + 1] == b'u' || b[i + 1] == b'U') {
            let n = if b[i + 1] == b'u' { 4 } else { 8 };
            let hex = b.get(i + 2..i + 2 + n)?;
            let v = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            out.push(char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER));
            i += 2 + n;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    Some(out)
}

/// Decodes a protocol-0 `STRING` operand: a quoted Python 2 string literal.
fn python_string_literal(line: &[u8]) -> Option<String> {
    let q = *line.first()?;
    if (q != b'\'' && q != b'"') || line.len() < 2 || *line.last()? != q {
        return None;
    }
    let body = &line[1..line.len() - 1];
    let mut out = String::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        if c != b'\\' {
            out.push(c as char);
            i += 1;
            continue;
        }
        let e = *body.get(i + 1)?;
        i += 2;
        match e {
            b'n' => out.push('\n'),
            b't' => out.push('\t'),
            b'r' => out.push('\r'),
            b'\\' => out.push('\\'),
            b'\'' => out.push('\''),
            b'"' => out.push('"'),
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                for _ in 0..2 {
                    match body.get(i) {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + (d - b'0') as u32;
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(char::from_u32(v & 0xFF)?);
            }
            b'x' => {
                let hex = body.get(i..i + 2)?;
                out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()? as char);
                i += 2;
            }
            other => {
                out.push('\\');
                out.push(other as char);
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol0_and_2_basics() {
        // pickle.dumps([1, 'a', (2, 3.5)], protocol=0)
        let p0 = b"(lp0\nI1\naVa\np1\na(I2\nF3.5\ntp2\na.";
        let p = parse(p0).unwrap();
        let items = p.as_seq(p.root).unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(p.as_int(items[0]), Some(1));
        assert_eq!(p.as_str(items[1]), Some("a"));
        // pickle.dumps(b'\xff\x00', protocol=2)
        let p2 = b"\x80\x02c_codecs\nencode\nq\x00X\x03\x00\x00\x00\xc3\xbf\x00q\x01X\x06\x00\x00\x00latin1q\x02\x86q\x03Rq\x04.";
        let p = parse(p2).unwrap();
        assert_eq!(p.as_bytes(p.root), Some(&[0xffu8, 0][..]));
    }

    #[test]
    fn rejects_code_execution() {
        let evil = b"cos\nsystem\n(S'echo hi'\ntR.";
        match parse(evil) {
            Err(PickleError::ForbiddenGlobal {
                offset: 0, module, ..
            }) => assert_eq!(module, "os"),
            other => panic!("{other:?}"),
        }
    }
}
