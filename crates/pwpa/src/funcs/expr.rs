//! User functions given as an expression in `x`, parsed by [`exmex`].

use exmex::{BinOp, Express, FlatEx, MakeOperators, Operator};

use super::refs;
use crate::error::{Error, Result};

/// The operators an expression may use.
///
/// Binary: `+ - * / ^`, `pow(a, b)`, `atan2(y, x)`, `min(a, b)`, `max(a, b)`.
/// Unary: `exp exp2 expm1 ln log log1p log2 log10 sqrt cbrt rsqrt abs signum sin cos
/// tan asin acos atan sinh cosh tanh asinh acosh atanh floor ceil round trunc erf
/// erfc sigmoid softplus gelu gelu_tanh silu mish elu selu relu log_sigmoid
/// hardswish` (`signum` is 0 at ±0). Constants: `pi PI π e E tau TAU τ`.
/// (`log` is the natural logarithm; `log_sigmoid` etc. use the catalogue's f64 references.)
#[derive(Clone, Debug)]
pub struct PwpaOps;

impl MakeOperators<f64> for PwpaOps {
    fn make<'a>() -> Vec<Operator<'a, f64>> {
        let bin = |repr: &'a str, prio: i64, comm: bool, f: fn(f64, f64) -> f64| {
            Operator::make_bin(
                repr,
                BinOp {
                    apply: f,
                    prio,
                    is_commutative: comm,
                },
            )
        };
        vec![
            bin("^", 4, false, f64::powf),
            bin("*", 2, true, |a, b| a * b),
            bin("/", 3, false, |a, b| a / b),
            Operator::make_bin_unary(
                "+",
                BinOp {
                    apply: |a, b| a + b,
                    prio: 0,
                    is_commutative: true,
                },
                |a| a,
            ),
            Operator::make_bin_unary(
                "-",
                BinOp {
                    apply: |a, b| a - b,
                    prio: 1,
                    is_commutative: false,
                },
                |a| -a,
            ),
            bin("pow", 0, false, f64::powf),
            bin("atan2", 0, false, f64::atan2),
            bin("min", 0, true, f64::min),
            bin("max", 0, true, f64::max),
            Operator::make_unary("abs", f64::abs),
            // The sign function: 0 at ±0 (as numpy's and torch's sign), not Rust's
            // f64::signum, which is ±1 there (a fit on [−1, 0] counted +1 at x = +0).
            Operator::make_unary("signum", |a| if a == 0.0 { 0.0 } else { a.signum() }),
            Operator::make_unary("sin", f64::sin),
            Operator::make_unary("cos", f64::cos),
            Operator::make_unary("tan", f64::tan),
            Operator::make_unary("asin", f64::asin),
            Operator::make_unary("acos", f64::acos),
            Operator::make_unary("atan", f64::atan),
            Operator::make_unary("sinh", f64::sinh),
            Operator::make_unary("cosh", f64::cosh),
            Operator::make_unary("tanh", f64::tanh),
            Operator::make_unary("asinh", f64::asinh),
            Operator::make_unary("acosh", f64::acosh),
            Operator::make_unary("atanh", f64::atanh),
            Operator::make_unary("floor", f64::floor),
            Operator::make_unary("ceil", f64::ceil),
            Operator::make_unary("round", f64::round),
            Operator::make_unary("trunc", f64::trunc),
            Operator::make_unary("exp", f64::exp),
            Operator::make_unary("exp2", f64::exp2),
            Operator::make_unary("expm1", refs::expm1),
            Operator::make_unary("sqrt", f64::sqrt),
            Operator::make_unary("rsqrt", refs::rsqrt),
            Operator::make_unary("cbrt", f64::cbrt),
            Operator::make_unary("ln", f64::ln),
            Operator::make_unary("log", f64::ln),
            Operator::make_unary("log1p", refs::log1p),
            Operator::make_unary("log2", f64::log2),
            Operator::make_unary("log10", f64::log10),
            Operator::make_unary("erf", refs::erf),
            Operator::make_unary("erfc", refs::erfc),
            Operator::make_unary("sigmoid", refs::sigmoid),
            Operator::make_unary("softplus", refs::softplus),
            Operator::make_unary("gelu", refs::gelu),
            Operator::make_unary("gelu_tanh", refs::gelu_tanh),
            Operator::make_unary("silu", refs::silu),
            Operator::make_unary("mish", refs::mish),
            Operator::make_unary("elu", refs::elu),
            Operator::make_unary("selu", refs::selu),
            Operator::make_unary("relu", refs::relu),
            Operator::make_unary("log_sigmoid", refs::log_sigmoid),
            Operator::make_unary("hardswish", refs::hardswish),
            Operator::make_constant("pi", std::f64::consts::PI),
            Operator::make_constant("PI", std::f64::consts::PI),
            Operator::make_constant("π", std::f64::consts::PI),
            Operator::make_constant("e", std::f64::consts::E),
            Operator::make_constant("E", std::f64::consts::E),
            Operator::make_constant("tau", std::f64::consts::TAU),
            Operator::make_constant("TAU", std::f64::consts::TAU),
            Operator::make_constant("τ", std::f64::consts::TAU),
        ]
    }
}

/// A parsed expression in `x` (or a constant expression).
///
/// Precedence is the conventional one: `^` binds tighter than unary minus and is
/// right-associative (`-x^2` = −(x²), `2^3^2` = 2⁹, `exp(-x^2/2)` is a Gaussian), then
/// `* /`, then `+ -`. Numbers may use scientific notation (`1e-3`). exmex on its own
/// binds unary minus first and `^` to the left, so the text is first rewritten with
/// explicit parentheses ([`normalize`]) and then parsed by exmex.
#[derive(Clone, Debug)]
pub struct Expression {
    text: String,
    expr: FlatEx<f64, PwpaOps>,
    /// Whether the expression uses x (a constant expression has no variables).
    has_x: bool,
}

impl Expression {
    /// Parses `text`; any variable other than `x` is an error.
    pub fn parse(text: &str) -> Result<Expression> {
        let err = |reason: String| Error::Expression {
            expr: text.to_string(),
            reason,
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(err("the expression is empty".into()));
        }
        let normalized = normalize(trimmed).map_err(err)?;
        let expr = FlatEx::<f64, PwpaOps>::parse(&normalized).map_err(|e| {
            // The parser's message for an unknown function is about its grammar
            // ("a number/variable cannot be on the right of a closing parenthesis"):
            // name the function instead.
            match unknown_call(trimmed) {
                Some(name) => err(format!(
                    "unknown function '{name}' (known functions: {})",
                    registry().listing
                )),
                None => err(e.to_string()),
            }
        })?;
        let vars = expr.var_names();
        let others: Vec<&str> = vars
            .iter()
            .map(|v| v.as_str())
            .filter(|v| *v != "x")
            .collect();
        if !others.is_empty() {
            return Err(err(format!(
                "unknown name{} {} (the variable must be called x; known functions: {})",
                if others.len() > 1 { "s" } else { "" },
                others
                    .iter()
                    .map(|v| format!("'{v}'"))
                    .collect::<Vec<_>>()
                    .join(", "),
                registry().listing
            )));
        }
        let has_x = vars.len() == 1;
        let e = Expression {
            text: trimmed.to_string(),
            expr,
            has_x,
        };
        // Evaluation must not fail on a parsed expression; check once.
        e.try_eval(0.5).map_err(err)?;
        Ok(e)
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn try_eval(&self, x: f64) -> std::result::Result<f64, String> {
        let r = if self.has_x {
            self.expr.eval(&[x])
        } else {
            self.expr.eval(&[])
        };
        r.map_err(|e| e.to_string())
    }

    /// The value at x (NaN if the evaluator reports an error, which a parsed
    /// expression does not do for a single-variable input).
    #[inline]
    pub fn eval(&self, x: f64) -> f64 {
        self.try_eval(x).unwrap_or(f64::NAN)
    }
}

/// The names an expression may use, read from [`PwpaOps`] (so that the lists in error
/// messages and the arity checks cannot drift from the operators that exist).
struct Registry {
    /// Functions of one argument, in registration order.
    unary: Vec<&'static str>,
    /// Functions of two arguments called as `name(a, b)`.
    binary: Vec<&'static str>,
    /// Named constants.
    constants: Vec<&'static str>,
    /// The list shown in errors: "exp, exp2, …, pow(a, b), …; constants pi, …".
    listing: String,
}

fn registry() -> &'static Registry {
    static REG: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REG.get_or_init(|| {
        let named = |r: &str| r.starts_with(|c: char| c.is_alphabetic() || c == '_');
        let (mut unary, mut binary, mut constants) = (Vec::new(), Vec::new(), Vec::new());
        for op in PwpaOps::make() {
            let r: &'static str = op.repr();
            if !named(r) {
                continue;
            }
            if op.constant().is_some() {
                constants.push(r);
            } else if op.has_bin() {
                binary.push(r);
            } else if op.has_unary() {
                unary.push(r);
            }
        }
        let mut funcs: Vec<String> = unary.iter().map(|s| s.to_string()).collect();
        funcs.extend(binary.iter().map(|b| {
            if *b == "atan2" {
                format!("{b}(y, x)")
            } else {
                format!("{b}(a, b)")
            }
        }));
        let listing = format!("{}; constants {}", funcs.join(", "), constants.join(", "));
        Registry {
            unary,
            binary,
            constants,
            listing,
        }
    })
}

/// The first name in `text` that is called like a function (`name(`) but is not a
/// function of [`PwpaOps`].
fn unknown_call(text: &str) -> Option<String> {
    let reg = registry();
    let known = |n: &str| reg.unary.contains(&n) || reg.binary.contains(&n);
    let c: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphabetic() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let name: String = c[start..i].iter().collect();
            let mut j = i;
            while j < c.len() && c[j].is_whitespace() {
                j += 1;
            }
            if j < c.len() && c[j] == '(' && !known(&name) {
                return Some(name);
            }
        } else if c[i].is_ascii_digit() || c[i] == '.' {
            // A number, with an exponent like 1e-3 (whose 'e' is not a name).
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    None
}

const COMMA: &str = "',' separates the arguments of a function call (pow, atan2, min, max), \
and nothing else";

/// Rewrites an expression into exmex syntax with conventional precedence: powers
/// become `(base)^(exponent)` (right-associative), a unary minus applies to the
/// whole power chain after it (`-(…)`), numbers in scientific notation are
/// written out in full decimal (which round-trips exactly), and a call of a
/// two-argument function `f(a, b)` becomes the infix `((a)f(b))`.
///
/// exmex's own handling of the call syntax (it rewrites each ',' while tokenizing,
/// with one flag for the parenthesis to close) fails when the second argument holds
/// another two-argument call (`max(-1, min(x, 1))`: "parentheses mismatch"), so
/// no comma ever reaches it.
pub fn normalize(text: &str) -> std::result::Result<String, String> {
    let mut n = Normalizer {
        c: text.chars().collect(),
        i: 0,
        depth: 0,
    };
    let mut out = String::with_capacity(text.len() * 2);
    n.expr(&mut out)?;
    if n.peek() == Some(',') {
        return Err(COMMA.into());
    }
    if n.i < n.c.len() {
        return Err(format!("unmatched ')' at position {}", n.i + 1));
    }
    Ok(out)
}

/// Deepest nesting of operands (parentheses, calls, signs, powers) an expression may
/// have: the normalizer and exmex's parser recurse once per level, and a deep enough
/// expression (a 10 KB string on a 2 MiB thread stack) would overflow the stack.
const MAX_NESTING: usize = 256;

struct Normalizer {
    c: Vec<char>,
    i: usize,
    /// Operands being read (nesting level).
    depth: usize,
}

impl Normalizer {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.i += 1;
        }
    }

    /// Operands separated by binary operators, up to ')', ',' or the end.
    fn expr(&mut self, out: &mut String) -> std::result::Result<(), String> {
        loop {
            self.ws();
            match self.peek() {
                None | Some(')' | ',') => return Ok(()),
                _ => {}
            }
            let start = self.i;
            self.operand(out)?;
            let left: String = self.c[start..self.i].iter().collect();
            self.ws();
            match self.peek() {
                None | Some(')' | ',') => return Ok(()),
                Some(op @ ('+' | '-' | '*' | '/')) => {
                    out.push(op);
                    self.i += 1;
                    self.ws();
                    if matches!(self.peek(), None | Some(')' | ',')) {
                        return Err(format!(
                            "'{op}' at position {} has no right operand",
                            self.i
                        ));
                    }
                }
                // Juxtaposition: a function applied without parentheses (`sin x`,
                // `exp -x^2`) is refused — exmex would bind it tighter than a power or a
                // sign after it (`exp -x^2` was exp(-x)^2); anything else (`2x`, `x x`,
                // `(x+1)(x-1)`) lacks an operator.
                Some(next) => {
                    let left = left.trim();
                    let bare_name = left.chars().all(|ch| ch.is_alphanumeric() || ch == '_')
                        && left.starts_with(|ch: char| ch.is_alphabetic() || ch == '_')
                        && left != "x"
                        && !registry().constants.contains(&left);
                    if bare_name {
                        return Err(format!(
                            "'{left}' is applied without parentheses at position {}: write \
                             {left}(…) (a function's argument always goes in parentheses)",
                            self.i + 1
                        ));
                    }
                    if "%=<>!&|~?:;".contains(next) {
                        return Err(format!(
                            "'{next}' at position {} is not an operator of pwpa's expressions \
                             (they have +, -, *, / and ^)",
                            self.i + 1
                        ));
                    }
                    return Err(format!(
                        "missing operator between '{left}' and '{next}' at position {} \
                         (write products with *, e.g. 2*x)",
                        self.i + 1
                    ));
                }
            }
        }
    }

    /// Optional unary signs, then a primary and its (right-associative) power chain.
    fn operand(&mut self, out: &mut String) -> std::result::Result<(), String> {
        if self.depth >= MAX_NESTING {
            return Err(format!(
                "the expression nests deeper than {MAX_NESTING} levels (parentheses, calls, \
                 signs and powers) at position {}",
                self.i + 1
            ));
        }
        self.depth += 1;
        let r = self.operand_at_depth(out);
        self.depth -= 1;
        r
    }

    fn operand_at_depth(&mut self, out: &mut String) -> std::result::Result<(), String> {
        self.ws();
        if let Some(sign @ ('-' | '+')) = self.peek() {
            self.i += 1;
            let mut inner = String::new();
            self.operand(&mut inner)?;
            if sign == '-' {
                out.push_str("-(");
                out.push_str(&inner);
                out.push(')');
            } else {
                out.push_str(&inner);
            }
            return Ok(());
        }
        let mut base = String::new();
        self.primary(&mut base)?;
        self.ws();
        if self.peek() == Some('^') {
            self.i += 1;
            let mut exponent = String::new();
            self.operand(&mut exponent)?;
            out.push('(');
            out.push_str(&base);
            out.push_str(")^(");
            out.push_str(&exponent);
            out.push(')');
        } else {
            out.push_str(&base);
        }
        Ok(())
    }

    /// The comma-separated expressions inside the parentheses at the current '(',
    /// each normalized on its own.
    fn arguments(&mut self) -> std::result::Result<Vec<String>, String> {
        let start = self.i;
        self.i += 1;
        let mut args = Vec::new();
        loop {
            let mut arg = String::new();
            self.expr(&mut arg)?;
            args.push(arg);
            if self.peek() == Some(',') {
                self.i += 1;
            } else {
                break;
            }
        }
        if self.peek() != Some(')') {
            return Err(format!("missing ')' for the '(' at position {}", start + 1));
        }
        self.i += 1;
        Ok(args)
    }

    fn primary(&mut self, out: &mut String) -> std::result::Result<(), String> {
        self.ws();
        let start = self.i;
        match self.peek() {
            None => Err("the expression ends where an operand is expected".into()),
            // A comma belongs to the arguments of a function call only.
            Some('(') => {
                let args = self.arguments()?;
                if args.len() > 1 {
                    return Err(COMMA.into());
                }
                if args[0].trim().is_empty() {
                    return Err(format!("empty parentheses at position {}", start + 1));
                }
                out.push('(');
                out.push_str(&args[0]);
                out.push(')');
                Ok(())
            }
            Some(ch) if ch.is_ascii_digit() || ch == '.' => {
                while self
                    .peek()
                    .is_some_and(|ch| ch.is_ascii_digit() || ch == '.')
                {
                    self.i += 1;
                }
                if matches!(self.peek(), Some('e' | 'E')) {
                    let save = self.i;
                    self.i += 1;
                    if matches!(self.peek(), Some('+' | '-')) {
                        self.i += 1;
                    }
                    if self.peek().is_some_and(|ch| ch.is_ascii_digit()) {
                        while self.peek().is_some_and(|ch| ch.is_ascii_digit()) {
                            self.i += 1;
                        }
                    } else {
                        self.i = save; // `2e`: the number ends before the e (exmex then refuses `2 e`)
                    }
                }
                let lit: String = self.c[start..self.i].iter().collect();
                let v: f64 = lit
                    .parse()
                    .map_err(|_| format!("'{lit}' is not a number"))?;
                if !v.is_finite() {
                    return Err(format!("the number '{lit}' overflows"));
                }
                // Display never uses an exponent and round-trips exactly.
                out.push_str(&format!("{v}"));
                Ok(())
            }
            Some(ch) if ch.is_alphabetic() || ch == '_' => {
                while self
                    .peek()
                    .is_some_and(|ch| ch.is_alphanumeric() || ch == '_')
                {
                    self.i += 1;
                }
                let name: String = self.c[start..self.i].iter().collect();
                self.ws();
                let reg = registry();
                let binary = reg.binary.contains(&name.as_str());
                let known = binary || reg.unary.contains(&name.as_str());
                let value = name == "x" || reg.constants.contains(&name.as_str());
                if self.peek() == Some('(') && !known && !value {
                    return Err(format!(
                        "unknown function '{name}' (known functions: {})",
                        reg.listing
                    ));
                }
                if known && !value && self.peek() != Some('(') {
                    // `sin x`, `exp -x^2`: exmex would bind the function tighter than a
                    // power or sign after it (`exp -x^2` was exp(-x)^2).
                    return Err(format!(
                        "'{name}' at position {} is a function: write {name}(…) (its argument \
                         always goes in parentheses)",
                        start + 1
                    ));
                }
                if self.peek() != Some('(') || !known {
                    // A variable or constant (`x (x+1)` lacks an operator, which
                    // [`Normalizer::expr`] reports), or a name that is not called,
                    // which [`Expression::parse`] names if it is unknown.
                    out.push_str(&name);
                    return Ok(());
                }
                let open = self.i;
                let args = self.arguments()?;
                let want = if binary { 2 } else { 1 };
                if args.len() != want {
                    return Err(format!(
                        "{name}(…) at position {} takes {want} argument{} (got {})",
                        open + 1,
                        if want == 1 { "" } else { "s" },
                        args.len()
                    ));
                }
                if let Some(k) = args.iter().position(|a| a.trim().is_empty()) {
                    return Err(format!(
                        "{name}(…) at position {} has an empty argument{}",
                        open + 1,
                        if want == 1 {
                            String::new()
                        } else {
                            format!(" ({} of {want})", k + 1)
                        }
                    ));
                }
                if binary {
                    // The infix form exmex parses reliably (see [`normalize`]).
                    out.push_str(&format!("(({}){name}({}))", args[0], args[1]));
                } else {
                    out.push_str(&name);
                    out.push('(');
                    out.push_str(&args[0]);
                    out.push(')');
                }
                Ok(())
            }
            Some(ch) => {
                let hint = if ch == '*' && start > 0 && self.c[start - 1] == '*' {
                    " (use ^ for powers)"
                } else {
                    ""
                };
                Err(format!(
                    "unexpected '{ch}' at position {} where an operand is expected{hint}",
                    start + 1
                ))
            }
        }
    }
}
