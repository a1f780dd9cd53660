//! Why a request to an endpoint failed (`EndpointError`: each names what arrived), and why no
//! client could be made (`ClientError`). Apart from the client's streaming code.

/// Why a request failed; each names what arrived.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EndpointError {
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// `what`: the content type, and for a success that is no event stream, that it is not.
    #[error("{url} answered HTTP {status} {what}: {body}")]
    Status {
        url: String,
        status: u16,
        what: String,
        body: String,
    },
    #[error("malformed answer from {url}: {what}")]
    Malformed { url: String, what: String },
    #[error("the server answered as model \"{got}\", not \"{want}\"")]
    WrongModel { got: String, want: String },
    #[error("the server lists the models [{listed}], not \"{want}\"")]
    NotListed { listed: String, want: String },
    #[error("the server reported an error: {0}")]
    Server(String),
    #[error("timed out after {secs} s with {chunks} chunks received")]
    Timeout { secs: f64, chunks: usize },
    #[error("the connection broke after {chunks} chunks: {reason}")]
    Broken { chunks: usize, reason: String },
}

pub type Error = EndpointError;

impl EndpointError {
    pub(crate) fn malformed(url: &str, what: impl Into<String>) -> Self {
        EndpointError::Malformed {
            url: url.into(),
            what: what.into(),
        }
    }
}

/// Why no client could be made: before any request, so nothing an endpoint said.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    #[error("cannot start the HTTP runtime: {0}")]
    Runtime(String),
    #[error("cannot make the HTTP client: {0}")]
    Http(String),
    #[error("ca_file: {0}")]
    CaFile(crate::config::Invalid),
}
