//! Table-driven tests of the rule book.
