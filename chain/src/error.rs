/// Errors of the chain layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A deployment file that is missing, too large or not what `Deploy.s.sol` writes.
    #[error("deployment file {path}: {reason}")]
    Deployment {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// anvil or forge could not be found or started.
    #[error("devnet tool {tool}: {reason}")]
    Tool {
        /// The program.
        tool: String,
        /// What went wrong.
        reason: String,
    },
    /// The Foundry deployment script failed; its output is attached.
    #[error("forge script Deploy.s.sol failed ({status}):\n{output}")]
    DeployScript {
        /// Exit status.
        status: String,
        /// The end of its stdout and stderr.
        output: String,
    },
    /// The node serves another chain than the deployment file describes.
    #[error("the node at {rpc_url} is chain {node}, the deployment file is for chain {deployment}")]
    WrongChain {
        /// The node's URL.
        rpc_url: String,
        /// The node's chain id.
        node: u64,
        /// The deployment file's chain id.
        deployment: u64,
    },
    /// A call or transaction failed (node unreachable, revert, receipt missing).
    #[error("{step}: {reason}")]
    Chain {
        /// The contract call or step.
        step: String,
        /// The node's answer.
        reason: String,
    },
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
