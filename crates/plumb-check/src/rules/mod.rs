//! The rule catalogue, one file per rule, grouped by area.

use crate::rule::Rule;

/// Every rule, in code order.
pub fn all() -> Vec<Box<dyn Rule>> {
    let mut rules: Vec<Box<dyn Rule>> = vec![
        // Each area adds its rules here.
    ];
    rules.sort_by_key(|r| r.code());
    rules
}
