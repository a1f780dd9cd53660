//! The answer's latency lines: the goodput objective's SLO and load, with the
//! definition of goodput it uses, the candidates that left because a round had no good
//! request, and the TTFT/ITL limits of a llama-bench objective with what broke them.

use crate::config::tune::{describe_slo, describe_slots};
use crate::record::tune::{Limit, Outcome, TuneRecord, goodput_steps as steps};
use crate::record::{RunRecord, TestRecord};

pub(super) fn lines(record: &RunRecord, t: &TuneRecord, winner: &TestRecord) -> String {
    let Some(s) = &t.slo else {
        return String::new();
    };
    let mut out = String::new();
    if let Some(g) = &s.goodput {
        out.push_str(&format!(
            "goodput: requests meeting the SLO ({}) per second of a round (first arrival to \
             last token), as vLLM's bench serve --goodput counts them; each round {} requests \
             ({}) arriving at {} req/s (Poisson), {}, {}\n",
            describe_slo(&g.slo),
            g.n_requests,
            g.workload,
            g.rate,
            describe_slots(&g.slots),
            where_served(record, t)
        ));
        let steps = steps(winner);
        if let Some(st) = steps.last() {
            let met = steps.iter().filter(|s| s.met).count();
            out.push_str(&format!(
                "the answer's last round: {} of {} requests good ({:.0}%, the SLO asks {:.0}%); \
                 the SLO's share met in {met} of its {} rounds\n",
                st.n_good,
                st.n_requests,
                st.attainment * 100.0,
                g.slo.attainment * 100.0,
                steps.len()
            ));
            let (good, all) = steps
                .iter()
                .fold((0, 0), |(g, n), s| (g + s.n_good, n + s.n_requests));
            if all > 0 && f64::from(good) < g.slo.attainment * f64::from(all) - 1e-9 {
                out.push_str(&format!(
                    "at this load the answer does not meet the SLO's share: {good} of {all} \
                     requests good over its rounds; it serves the most good requests per \
                     second of the candidates raced, and a lower arrival_rate or fewer slots \
                     may meet it\n"
                ));
            }
        }
        let none = no_good(record, t).join(", ");
        let what = "left the race with no request within the SLO in a round: ";
        out.push_str(&crate::report::wrapped(what, &none, "\n"));
    }
    for (name, max) in [
        (Limit::MaxTtftMs, s.max_ttft_ms),
        (Limit::MaxItlMs, s.max_itl_ms),
    ] {
        let Some(max) = max else { continue };
        let broke: Vec<String> = (s.broke.iter())
            .filter(|e| e.limit == name)
            .map(|e| format!("{} ({})", e.id, e.why))
            .collect();
        out.push_str(&format!(
            "{name} {max} (p{:.0} of each raced candidate's measured repetitions; what the \
             rounds showed, not a guarantee): {}\n",
            s.quantile * 100.0,
            if broke.is_empty() {
                "none broke it".to_string()
            } else {
                format!("excluded {}: {}", broke.len(), broke.join("; "))
            }
        ));
    }
    if s.broke.iter().any(|e| e.id == winner.id) {
        out.push_str(
            "the answer breaks a latency limit: no raced candidate is measured within it \
             (the limit bounds the objective's own time, so the fastest breaks it least)\n",
        );
    }
    out
}

/// Where the raced candidates were served: "in process", "over HTTP (...)" or both.
fn where_served(record: &RunRecord, t: &TuneRecord) -> &'static str {
    let http = |id: &str| {
        (record.tests.iter().find(|x| x.id == id))
            .and_then(|x| x.serving.as_ref())
            .is_some_and(|s| !s.transport.is_in_process())
    };
    match t.candidates.iter().filter(|c| http(&c.id)).count() {
        0 => "in process",
        n if n == t.candidates.len() => {
            "over HTTP (a launched server started before each round, its load outside the round)"
        }
        _ => {
            "in process and over HTTP (a launched server started before each round, its load outside the round)"
        }
    }
}

/// "id (round 2: 0 of 16 good)" per failed candidate whose last round had no good request.
fn no_good(record: &RunRecord, t: &TuneRecord) -> Vec<String> {
    (t.candidates.iter())
        .filter(|c| c.outcome == Outcome::Failed)
        .filter_map(|c| {
            let x = record.tests.iter().find(|x| x.id == c.id)?;
            let st = steps(x).last().filter(|st| st.n_good == 0)?;
            let (id, round, n) = (&c.id, c.at_round.unwrap_or(0), st.n_requests);
            Some(format!("{id} (round {round}: 0 of {n} good)"))
        })
        .collect()
}

/// Why a race has no answer: no candidate measured, or (goodput) none met the SLO once.
pub(super) fn no_answer(record: &RunRecord, t: &TuneRecord) -> String {
    let goodput = t.slo.as_ref().and_then(|s| s.goodput.as_ref());
    let none = no_good(record, t);
    match goodput {
        Some(g) if !none.is_empty() && none.len() == t.candidates.len() => format!(
            "no answer: no candidate served a request within the SLO ({}) at {} req/s, {}: \
             {}\n",
            describe_slo(&g.slo),
            g.rate,
            describe_slots(&g.slots),
            none.join(", ")
        ),
        _ => "no answer: no candidate was measured\n".into(),
    }
}
