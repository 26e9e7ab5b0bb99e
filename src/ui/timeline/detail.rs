//! The detail control's scale: slider positions to "draw the N largest" and back. The left
//! half is logarithmic up to the 10 % largest, so a few elements are easy to pick; then
//! linear to the 50 % largest at three quarters, and to all of them at the right end, the
//! stops labelled as memory_viz's detail is ("10%" means the 10 % largest).
//!
//! Pure arithmetic, unit-tested natively.

/// Positions of the slider.
pub const STEPS: f64 = 1000.0;

/// Labelled stops: slider position and the share of the elements drawn there.
pub const STOPS: [(f64, &str, f64); 3] = [
    (500.0, "10%", 0.1),
    (750.0, "50%", 0.5),
    (1000.0, "all", 1.0),
];

/// How many of `elements` a share covers (at least one when there are any).
fn share(elements: u32, fraction: f64) -> u32 {
    if elements == 0 {
        return 0;
    }
    ((elements as f64 * fraction).round() as u32).clamp(1, elements)
}

/// The detail (how many of the largest elements to draw one by one) at slider position `v`.
pub fn detail_at(v: f64, elements: u32) -> u32 {
    let v = v.clamp(0.0, STEPS);
    let (tenth, half) = (share(elements, 0.1), share(elements, 0.5));
    let linear = |v: f64, (p0, d0): (f64, u32), (p1, d1): (f64, u32)| {
        let t = (v - p0) / (p1 - p0);
        (d0 as f64 + t * (d1 as f64 - d0 as f64)).round() as u32
    };
    let d = if v <= STOPS[0].0 {
        let top = (tenth as f64 + 1.0).ln();
        ((v / STOPS[0].0 * top).exp() - 1.0).round() as u32
    } else if v <= STOPS[1].0 {
        linear(v, (STOPS[0].0, tenth), (STOPS[1].0, half))
    } else {
        linear(v, (STOPS[1].0, half), (STOPS[2].0, elements))
    };
    d.min(elements)
}

/// The slider position of `detail`.
pub fn position_of(detail: u32, elements: u32) -> f64 {
    if elements == 0 {
        return STEPS;
    }
    let (tenth, half) = (share(elements, 0.1), share(elements, 0.5));
    let detail = detail.min(elements);
    let linear = |d: u32, (p0, d0): (f64, u32), (p1, d1): (f64, u32)| {
        if d1 == d0 {
            p1
        } else {
            p0 + (d - d0) as f64 / (d1 - d0) as f64 * (p1 - p0)
        }
    };
    let v = if detail <= tenth {
        (detail as f64 + 1.0).ln() / (tenth as f64 + 1.0).ln() * STOPS[0].0
    } else if detail <= half {
        linear(detail, (STOPS[0].0, tenth), (STOPS[1].0, half))
    } else {
        linear(detail, (STOPS[1].0, half), (STOPS[2].0, elements))
    };
    v.round()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stops_draw_the_tenth_the_half_and_all_of_the_largest() {
        assert_eq!(detail_at(500.0, 9836), 984);
        assert_eq!(detail_at(750.0, 9836), 4918);
        assert_eq!(detail_at(1000.0, 9836), 9836);
        assert_eq!(detail_at(0.0, 9836), 0);
        assert_eq!(position_of(984, 9836), 500.0);
        assert_eq!(position_of(4918, 9836), 750.0);
        assert_eq!(position_of(9836, 9836), 1000.0);
        assert_eq!(position_of(0, 9836), 0.0);
    }

    #[test]
    fn the_scale_rises_steadily_and_positions_come_back() {
        for elements in [0, 1, 2, 7, 100, 9836, 2_000_000] {
            let mut last = 0;
            for p in 0..=STEPS as u32 {
                let d = detail_at(p as f64, elements);
                assert!(d >= last, "{elements} elements: {p} gives {d} < {last}");
                assert!(d <= elements);
                last = d;
                // The slider shows a detail where it was set, give or take a step.
                let back = detail_at(position_of(d, elements), elements);
                assert_eq!(back, d, "{elements} elements, position {p}");
            }
            assert_eq!(last, elements);
        }
    }

    #[test]
    fn a_few_elements_are_easy_to_pick_at_the_left() {
        // The first 50 positions reach only a handful of a million elements.
        assert!(detail_at(50.0, 1_000_000) < 10);
        assert!(detail_at(250.0, 1_000_000) < 1_000);
    }
}
