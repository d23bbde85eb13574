//! The report fields a rule can test, and how strong each is as evidence.

/// A report field a rule can test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Field {
    /// `side_effects`
    SideEffects,
    /// `schema_valid` (derived from `output` and `schema`)
    SchemaValid,
    /// `error_code`
    ErrorCode,
    /// `sqlstate`
    Sqlstate,
    /// `errno`
    Errno,
    /// `grpc_code`
    GrpcCode,
    /// `exception`
    Exception,
    /// `http_status`
    HttpStatus,
    /// `exit_code`
    ExitCode,
    /// `signal`
    Signal,
    /// `message`
    Message,
    /// `tool`
    Tool,
    /// `operation`
    Operation,
    /// `headers`
    Headers,
    /// `elapsed_ms`
    ElapsedMs,
}

/// Every field, strongest first.
pub const ALL_FIELDS: [Field; 15] = [
    Field::SideEffects,
    Field::SchemaValid,
    Field::ErrorCode,
    Field::Sqlstate,
    Field::Errno,
    Field::GrpcCode,
    Field::Exception,
    Field::HttpStatus,
    Field::ExitCode,
    Field::Signal,
    Field::Message,
    Field::Tool,
    Field::Operation,
    Field::Headers,
    Field::ElapsedMs,
];

impl Field {
    /// The weakest level: context fields.
    pub const WEAKEST_LEVEL: u8 = 7;

    /// The name used in rule files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Field::SideEffects => "side_effects",
            Field::SchemaValid => "schema_valid",
            Field::ErrorCode => "error_code",
            Field::Sqlstate => "sqlstate",
            Field::Errno => "errno",
            Field::GrpcCode => "grpc_code",
            Field::Exception => "exception",
            Field::HttpStatus => "http_status",
            Field::ExitCode => "exit_code",
            Field::Signal => "signal",
            Field::Message => "message",
            Field::Tool => "tool",
            Field::Operation => "operation",
            Field::Headers => "headers",
            Field::ElapsedMs => "elapsed_ms",
        }
    }

    /// The field a rule-file key names.
    pub fn from_name(name: &str) -> Option<Field> {
        ALL_FIELDS.iter().copied().find(|f| f.name() == name)
    }

    /// The field names joined, for messages.
    pub fn names() -> String {
        ALL_FIELDS
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How strong the field is as evidence: 1 is strongest (what actually happened), then a
    /// provider's or system's own code, a protocol status or library error type, an HTTP
    /// status, a process exit, message text, and context last.
    pub fn level(self) -> u8 {
        match self {
            Field::SideEffects | Field::SchemaValid => 1,
            Field::ErrorCode | Field::Sqlstate | Field::Errno => 2,
            Field::GrpcCode | Field::Exception => 3,
            Field::HttpStatus => 4,
            Field::ExitCode | Field::Signal => 5,
            Field::Message => 6,
            Field::Tool | Field::Operation | Field::Headers | Field::ElapsedMs => 7,
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u8)
    }
}

/// A set of fields, as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FieldSet(u16);

impl FieldSet {
    /// No fields.
    pub const EMPTY: FieldSet = FieldSet(0);

    /// The set of these fields.
    pub fn of(fields: &[Field]) -> FieldSet {
        let mut set = FieldSet::EMPTY;
        for field in fields {
            set.insert(*field);
        }
        set
    }

    /// Adds a field.
    pub fn insert(&mut self, field: Field) {
        self.0 |= field.bit();
    }

    /// Removes a field.
    pub fn remove(&mut self, field: Field) {
        self.0 &= !field.bit();
    }

    /// Whether the field is in the set.
    pub fn contains(self, field: Field) -> bool {
        self.0 & field.bit() != 0
    }

    /// Whether every field of `other` is in this set.
    pub fn is_superset(self, other: FieldSet) -> bool {
        self.0 & other.0 == other.0
    }

    /// The level of the strongest field, if any.
    pub fn strongest_level(self) -> Option<u8> {
        self.iter().map(Field::level).min()
    }

    /// The fields of one level.
    #[must_use]
    pub fn at_level(self, level: u8) -> FieldSet {
        FieldSet::of(
            &self
                .iter()
                .filter(|f| f.level() == level)
                .collect::<Vec<_>>(),
        )
    }

    /// The fields, strongest first.
    pub fn iter(self) -> impl Iterator<Item = Field> {
        ALL_FIELDS.into_iter().filter(move |f| self.contains(*f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for field in ALL_FIELDS {
            assert_eq!(Field::from_name(field.name()), Some(field));
        }
    }

    #[test]
    fn the_issue_order_of_strength_holds() {
        // A provider code, SQLSTATE or errno beats a gRPC code, which beats an HTTP status,
        // which beats an exit code; message text comes after every structured signal.
        assert!(Field::ErrorCode.level() < Field::GrpcCode.level());
        assert_eq!(Field::Sqlstate.level(), Field::Errno.level());
        assert!(Field::GrpcCode.level() < Field::HttpStatus.level());
        assert!(Field::HttpStatus.level() < Field::ExitCode.level());
        assert!(Field::ExitCode.level() < Field::Message.level());
    }

    #[test]
    fn sets() {
        let set = FieldSet::of(&[Field::HttpStatus, Field::Message, Field::Errno]);
        assert_eq!(set.strongest_level(), Some(2));
        assert_eq!(set.at_level(4), FieldSet::of(&[Field::HttpStatus]));
        assert!(set.is_superset(FieldSet::of(&[Field::Message])));
        assert!(!set.is_superset(FieldSet::of(&[Field::Tool])));
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Field::Errno, Field::HttpStatus, Field::Message]
        );
    }
}
