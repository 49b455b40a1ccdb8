//! CPU evaluation: the fast path, bit-identical to [`Table::eval`](crate::Table::eval).
//!
//! STUB API — owned by the CPU evaluation work. This placeholder calls the oracle.

use crate::element::Element;
use crate::error::Result;
use crate::table::Table;

/// How much parallelism to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parallelism {
    /// One thread.
    Sequential,
    /// Rayon's global pool, for inputs above a size threshold.
    Rayon,
}

/// A table prepared for fast evaluation.
#[derive(Clone, Debug)]
pub struct Evaluator {
    table: Table,
    parallelism: Parallelism,
}

impl Evaluator {
    /// Prepares `table`.
    pub fn new(table: &Table) -> Self {
        Evaluator {
            table: table.clone(),
            parallelism: Parallelism::Rayon,
        }
    }

    /// Sets the parallelism.
    pub fn with_parallelism(mut self, p: Parallelism) -> Self {
        self.parallelism = p;
        self
    }

    /// The table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Evaluates `input` into `output` (same length).
    pub fn eval<T: Element, U: Element>(&self, input: &[T], output: &mut [U]) -> Result<()> {
        self.table.eval_reference(input, output)
    }

    /// Evaluates in place.
    pub fn eval_in_place<T: Element>(&self, data: &mut [T]) {
        for v in data.iter_mut() {
            *v = self.table.eval(*v);
        }
    }
}
