//! `--at peak|end|EVENT`: the core's [`Moment`] as the command line reads and names it. The
//! user counts events (trace rows, from 0); the core counts states, `event + 1` being the
//! state after an event, so the two meet here and nowhere else.

use memsight_core::analysis::moment::Moment;
use memsight_core::analysis::DeviceFacts;
use memsight_core::model::{Row, State};

/// `peak`, `end`, or an event number.
pub fn parse(text: &str) -> Result<Moment, String> {
    match text {
        "peak" => Ok(Moment::Peak),
        "end" => Ok(Moment::End),
        n => n
            .parse()
            .map(|row| Moment::after_event(Row::new(row)))
            .map_err(|_| format!("'{n}' is not a moment: say peak, end, or an event number")),
    }
}

/// `peak`, `end`, `event 41`.
pub fn name(moment: Moment) -> String {
    match moment {
        Moment::Peak => "peak".into(),
        Moment::End => "end".into(),
        Moment::State(s) => match s.row_before() {
            Some(event) => format!("event {event}"),
            None => "before the first event".into(),
        },
    }
}

/// The state `moment` is on `facts`' trace, or why there is none (an event beyond it).
pub fn state(moment: Moment, facts: &DeviceFacts) -> Result<State, String> {
    let rows = facts.allocated.len();
    match moment {
        Moment::State(s) if s > State::end(rows) => Err(format!(
            "event {} is beyond this device's trace ({rows} events)",
            s.row_before().map_or(0, Row::get)
        )),
        _ => Ok(moment.state(facts, rows)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_and_named_as_the_user_counts_them() {
        assert_eq!(parse("peak"), Ok(Moment::Peak));
        assert_eq!(parse("end"), Ok(Moment::End));
        assert_eq!(parse("41"), Ok(Moment::State(State::new(42))));
        assert!(parse("soon").is_err());
        assert_eq!(name(parse("41").unwrap()), "event 41");
        assert_eq!(name(Moment::End), "end");
    }
}
