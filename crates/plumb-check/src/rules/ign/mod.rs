//! IGN: the `# plumb:ignore` comments themselves.

mod ignore_without_reason;

pub use ignore_without_reason::IgnoreWithoutReason;
