//! Structure-aware: Rust source nested as deep as the fuzzer likes, of every kind syn follows by recursion
//! (brackets, generics, closures, references, unary operators, casts, field/method/`?`/`.await` chains, binary
//! operators, `else if`), mixed, and wrapped in a real controller, without the input having to spell each level
//! out (libFuzzer's `-max_len` bounds the input, not the depth). Depths up to 200,000, far past where syn's
//! recursion overflowed a thread's stack: scan must answer CA001 for the item and judge the rest.
#![no_main]
use arbitrary::Arbitrary;
use ctrlaudit::config::Config;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary, Clone, Copy)]
enum Level {
    Paren,
    Bracket,
    Brace,
    Generic,
    Closure,
    ClosurePair,
    Ref,
    Not,
    Neg,
    Cast,
    Field,
    Method,
    Try,
    Await,
    Plus,
    ElseIf,
    Return,
}

impl Level {
    fn open(self) -> &'static str {
        match self {
            Level::Paren => "(",
            Level::Bracket => "[",
            Level::Brace => "{",
            Level::Generic => "Vec::<",
            Level::Closure => "|a| ",
            Level::ClosurePair => "|a, b| ",
            Level::Ref => "&",
            Level::Not => "!",
            Level::Neg => "-",
            Level::Return => "return ",
            Level::ElseIf => "if a { 0 } else ",
            _ => "",
        }
    }
    fn close(self) -> &'static str {
        match self {
            Level::Paren => ")",
            Level::Bracket => "]",
            Level::Brace => "}",
            Level::Generic => ">::new()",
            Level::Cast => " as u8",
            Level::Field => ".a",
            Level::Method => ".a()",
            Level::Try => "?",
            Level::Await => ".await",
            Level::Plus => " + x",
            _ => "",
        }
    }
}

#[derive(Debug, Arbitrary)]
struct Input {
    /// Runs of one kind each: (kind, how many levels).
    runs: Vec<(Level, u16)>,
    /// Scales every run (1..=16): deep files from short inputs.
    scale: u8,
    /// Where the nest goes: alone, or inside the reconcile of a controller with findings of its own.
    in_controller: bool,
    middle: String,
}

const CONTROLLER: &str = include_str!(
    "../../fixtures/scan/CA202-volatile-value-written-every-reconcile/bad_annotation_timestamp.rs"
);

fuzz_target!(|input: Input| {
    let scale = usize::from(input.scale % 16) + 1;
    let mut open = String::new();
    let mut close = Vec::new();
    let mut total = 0usize;
    for (level, n) in input.runs.iter().take(8) {
        let n = (usize::from(*n) * scale).min(200_000 - total.min(200_000));
        total += n;
        for _ in 0..n {
            open.push_str(level.open());
            close.push(level.close());
        }
    }
    let mut nest = open;
    nest.push_str(&input.middle);
    for c in close.iter().rev() {
        nest.push_str(c);
    }
    let deep = format!("fn nest() {{ let x = {nest}; }}\n");
    let text = if input.in_controller {
        format!("{CONTROLLER}\n{deep}")
    } else {
        deep
    };
    let _ = ctrlaudit::scan::scan_source("src/nest.rs", &text, &Config::default());
});
