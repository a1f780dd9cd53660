//! A served winner of a goodput race (issue 46) as commands: the llama-server command line
//! tpsbench launched for its rounds, or, for a server at a fixed endpoint, where it is (its
//! settings are its own: tpsbench did not start it).

use crate::record::TestRecord;
use crate::record::serving::Serving;

/// The winner's serving record when it was served over HTTP.
pub(super) fn of(w: &TestRecord) -> Option<&Serving> {
    w.serving
        .as_deref()
        .filter(|s| !s.transport.is_in_process())
}

/// The command a launched winner's server ran, quoted for a shell; None when tpsbench did
/// not start it.
pub(super) fn launched_line(s: &Serving) -> Option<String> {
    Some(line(s.server.as_ref()?.command.as_ref()?))
}

/// `cmd` as one shell line.
fn line(cmd: &[String]) -> String {
    let v: Vec<String> = cmd.iter().map(|a| super::quoted(a)).collect();
    v.join(" ")
}

/// The lines for a winner at a fixed endpoint.
pub(super) fn at_endpoint(w: &TestRecord, s: &Serving) -> String {
    let (endpoint, model) = s
        .server
        .as_ref()
        .map_or((String::new(), String::new()), |i| {
            (i.endpoint.clone(), i.served_model.clone())
        });
    format!(
        "\nrun it:\nthe server at {endpoint} (model {model:?}), as it ran: tpsbench did not \
         start it, and its settings are its own\n\nmodels.toml:\n[[model]]\nname = {:?}\n\
         endpoint = {endpoint:?}\n",
        w.model
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launched_command_is_quoted_where_the_shell_needs_it() {
        let cmd: Vec<String> = ["/x/llama-server", "-m", "my m.gguf", "--parallel", "4"]
            .map(String::from)
            .to_vec();
        assert_eq!(line(&cmd), "/x/llama-server -m 'my m.gguf' --parallel 4");
    }
}
