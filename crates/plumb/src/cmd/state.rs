//! `plumb state`: the locked, versioned, encrypted state store, and the probe that proves a
//! backend honours conditional writes. Parsing and printing only; the logic is plumb-state's.

use clap::{Args, Subcommand, ValueEnum};
use plumb_state::probe::{probe, reach, ProbeOptions, ProbeReport};
use plumb_state::{
    default_who, Keys, PutOptions, PutStep, StackName, StateError, StateStore, StoreLocation,
};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Set to a put step's name (`lock-taken`, `version-written`, `head-moved`) to make `put` abort
/// right after that step: the fault injection the crash-safety tests use.
const FAULT_ENV: &str = "PLUMB_STATE_FAULT";

#[derive(Args, Debug)]
pub struct StateArgs {
    #[command(subcommand)]
    pub command: StateCommand,
}

#[derive(Args, Debug)]
pub struct StoreOpt {
    /// The store: file:///dir or s3://bucket/prefix?endpoint=URL&region=R. Default:
    /// $PLUMB_STATE_STORE, else the user's data directory (~/.local/share/plumb/state).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
}

#[derive(Args, Debug)]
pub struct StackOpt {
    #[command(flatten)]
    store: StoreOpt,
    /// The stack (A-Z a-z 0-9 . _ -).
    #[arg(long, value_name = "NAME")]
    stack: String,
}

/// The keys of a command that only reads versions: identities decrypt, recipients would have
/// nothing to do.
#[derive(Args, Debug)]
pub struct IdentityOpt {
    /// An age identity file (AGE-SECRET-KEY-1...); repeatable. Default: $PLUMB_STATE_IDENTITY.
    /// With no key option, $PLUMB_STATE_PASSPHRASE is used as a passphrase.
    #[arg(long, value_name = "FILE")]
    identity: Vec<PathBuf>,
}

/// The keys of `put`, which encrypts a new version: its identities, and recipients to encrypt
/// to as well.
#[derive(Args, Debug)]
pub struct KeyOpt {
    #[command(flatten)]
    identities: IdentityOpt,
    /// An age recipient (age1...) to encrypt to as well; repeatable. Default:
    /// $PLUMB_STATE_RECIPIENTS (comma-separated).
    #[arg(long, value_name = "AGE1")]
    recipient: Vec<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum StateCommand {
    /// Create an empty stack.
    Init {
        #[command(flatten)]
        stack: StackOpt,
    },
    /// Write a new version from FILE (or stdin), under the stack's lock.
    Put {
        #[command(flatten)]
        stack: StackOpt,
        #[command(flatten)]
        keys: KeyOpt,
        /// Use a lock taken earlier with `plumb state lock` instead of taking one.
        #[arg(long, value_name = "ID")]
        lock_id: Option<String>,
        /// Allow keys that cannot decrypt the current version: from this version on, only the
        /// given keys can read the stack.
        #[arg(long)]
        rekey: bool,
        /// The file to store; `-` or none reads stdin.
        file: Option<PathBuf>,
    },
    /// Print the current version (or --serial N) to stdout.
    Get {
        #[command(flatten)]
        stack: StackOpt,
        #[command(flatten)]
        keys: IdentityOpt,
        /// The version to print (default: the current one, HEAD).
        #[arg(long, value_name = "N")]
        serial: Option<u64>,
    },
    /// List versions: serial, size, who, when; missing and damaged ones too (then exit 1).
    History {
        #[command(flatten)]
        stack: StackOpt,
        #[command(flatten)]
        keys: IdentityOpt,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
        output: Format,
    },
    /// Take the stack's lock and print its id.
    Lock {
        #[command(flatten)]
        stack: StackOpt,
        /// What the lock is for, shown to anyone it blocks.
        #[arg(long, default_value = "manual")]
        operation: String,
        /// When the lock should be considered stale (advice only), in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
        ttl: u64,
    },
    /// Release a lock you took, by its id.
    Unlock {
        #[command(flatten)]
        stack: StackOpt,
        /// The id `plumb state lock` printed.
        #[arg(long, value_name = "ID")]
        lock_id: String,
    },
    /// Break someone else's lock, by its id; completes a put interrupted after writing its version.
    ForceUnlock {
        #[command(flatten)]
        stack: StackOpt,
        #[command(flatten)]
        keys: IdentityOpt,
        /// The id of the lock to break, as the error that it blocked you printed it.
        #[arg(long, value_name = "ID")]
        lock_id: String,
    },
    /// Rebuild HEAD from the newest valid version: shows the plan, and applies it with --yes.
    Repair {
        #[command(flatten)]
        stack: StackOpt,
        #[command(flatten)]
        keys: IdentityOpt,
        /// Apply the plan (without it, nothing is changed, and the exit code is 1 when there is
        /// something to repair).
        #[arg(long)]
        yes: bool,
    },
    /// Serve the store as the `http` backend of OpenTofu and Terraform (GET and POST state,
    /// LOCK and UNLOCK), after probing it; stops on Ctrl-C or SIGTERM.
    Serve {
        #[command(flatten)]
        store: StoreOpt,
        #[command(flatten)]
        keys: KeyOpt,
        /// The address to listen on: loopback, or any address with --tls-cert and --tls-key.
        /// Port 0 picks a free port (the log says which).
        #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8750")]
        listen: String,
        /// The server's certificate chain (PEM), to serve HTTPS.
        #[arg(long, value_name = "FILE", requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The certificate's private key (PEM).
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// A file of `username:password` lines the backend may authenticate with. Default:
        /// $PLUMB_STATE_USERNAME and $PLUMB_STATE_PASSWORD.
        #[arg(long, value_name = "FILE")]
        credentials: Option<PathBuf>,
        /// Serve a store that fails the probe (logged as a warning): on it, two clients can
        /// both hold a lock and versions can be lost.
        #[arg(long)]
        allow_unsafe_store: bool,
        /// The expiry written into the backend's locks (advice only), in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
        lock_ttl: u64,
    },
    /// Prove the store honours conditional writes (exit 1 if it does not).
    Probe {
        #[command(flatten)]
        store: StoreOpt,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
        output: Format,
        /// Concurrent writers per race round.
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(2..=256))]
        writers: u16,
        /// Race rounds.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=100))]
        rounds: u16,
    },
}

/// A failure of the command, already worded for the user.
struct Failure(String);

impl From<StateError> for Failure {
    fn from(e: StateError) -> Self {
        Failure(e.to_string())
    }
}

pub fn run(args: StateArgs) -> ExitCode {
    match dispatch(args.command) {
        Ok(code) => code,
        Err(Failure(message)) => {
            crate::report::error(&message);
            ExitCode::from(2)
        }
    }
}

fn open_store(opt: &StoreOpt) -> Result<StateStore, Failure> {
    let url = opt.store.clone().or_else(|| {
        std::env::var("PLUMB_STATE_STORE")
            .ok()
            .filter(|s| !s.is_empty())
    });
    let location = match url {
        Some(url) => StoreLocation::parse(&url)?,
        None => StoreLocation::default_local()?,
    };
    Ok(StateStore::new(location.open()?))
}

fn open_stack(opt: &StackOpt) -> Result<(StateStore, StackName), Failure> {
    let stack = StackName::new(&opt.stack)?;
    Ok((open_store(&opt.store)?, stack))
}

/// The keys of a command that only reads: identities, else the passphrase.
fn load_identities(opt: &IdentityOpt) -> Result<Keys, Failure> {
    load_keys(opt, None)
}

/// The keys given: identities, recipients when the command encrypts (`Some`, else they are not
/// read from the environment either), else the passphrase.
fn load_keys(opt: &IdentityOpt, recipients: Option<&[String]>) -> Result<Keys, Failure> {
    let mut keys = Keys::new();
    let mut identities = opt.identity.clone();
    if identities.is_empty() {
        if let Some(path) = std::env::var_os("PLUMB_STATE_IDENTITY").filter(|p| !p.is_empty()) {
            identities.push(PathBuf::from(path));
        }
    }
    for path in &identities {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure(format!("cannot read identity {}: {e}", path.display())))?;
        keys.add_identities(&text)
            .map_err(|e| Failure(format!("{}: {e}", path.display())))?;
    }
    let encrypts = recipients.is_some();
    let mut recipients = recipients.map(<[String]>::to_vec).unwrap_or_default();
    if encrypts && recipients.is_empty() {
        if let Ok(list) = std::env::var("PLUMB_STATE_RECIPIENTS") {
            recipients.extend(
                list.split(',')
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(String::from),
            );
        }
    }
    for recipient in &recipients {
        keys.add_recipient(recipient)?;
    }
    if keys.is_empty() {
        if let Ok(passphrase) = std::env::var("PLUMB_STATE_PASSPHRASE") {
            if !passphrase.is_empty() {
                keys.set_passphrase(passphrase);
            }
        }
    }
    if keys.is_empty() {
        if !encrypts {
            // StateError::NoKey offers --recipient, which a command that only reads does not take.
            return Err(Failure(
                "no key: give --identity FILE, or set PLUMB_STATE_IDENTITY or PLUMB_STATE_PASSPHRASE"
                    .to_string(),
            ));
        }
        return Err(StateError::NoKey.into());
    }
    Ok(keys)
}

fn read_input(file: Option<&PathBuf>) -> Result<Vec<u8>, Failure> {
    match file {
        Some(path) if path.as_os_str() != "-" => {
            std::fs::read(path).map_err(|e| Failure(format!("cannot read {}: {e}", path.display())))
        }
        _ => {
            let mut data = Vec::new();
            std::io::stdin()
                .read_to_end(&mut data)
                .map_err(|e| Failure(format!("cannot read stdin: {e}")))?;
            Ok(data)
        }
    }
}

fn write_stdout(data: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(data)
        .and_then(|()| out.flush())
        .map_err(|e| Failure(format!("cannot write to stdout: {e}")))
}

fn dispatch(command: StateCommand) -> Result<ExitCode, Failure> {
    match command {
        StateCommand::Init { stack } => {
            let (store, name) = open_stack(&stack)?;
            store.init(&name)?;
            eprintln!("initialised stack {name} in {}", store.backend().describe());
        }
        StateCommand::Put {
            stack,
            keys,
            lock_id,
            rekey,
            file,
        } => {
            let keys = load_keys(&keys.identities, Some(&keys.recipient))?;
            let (store, name) = open_stack(&stack)?;
            let data = read_input(file.as_ref())?;
            let fault = std::env::var(FAULT_ENV).ok();
            let mut on_step = |step: PutStep| {
                if fault.as_deref() == Some(step.name()) {
                    std::process::abort();
                }
            };
            let who = default_who();
            let options = PutOptions {
                who: &who,
                lock_id: lock_id.as_deref(),
                rekey,
            };
            let serial = store.put_with(&name, &keys, &data, &options, &mut on_step)?;
            println!("{serial}");
            eprintln!("stack {name}: wrote version {serial}");
        }
        StateCommand::Get {
            stack,
            keys,
            serial,
        } => {
            let keys = load_identities(&keys)?;
            let (store, name) = open_stack(&stack)?;
            let version = store.get(&name, &keys, serial)?;
            write_stdout(&version.data)?;
        }
        StateCommand::History {
            stack,
            keys,
            output,
        } => {
            let keys = load_identities(&keys)?;
            let (store, name) = open_stack(&stack)?;
            let entries = store.history(&name, &keys)?;
            let text = match output {
                Format::Json => plumb_state::history_json(&name, &entries),
                Format::Text => {
                    let mut s = format!(
                        "{:>8}  {:>10}  {:<20}  {:<24}  {}\n",
                        "SERIAL", "SIZE", "CREATED", "WHO", "STATUS"
                    );
                    for e in &entries {
                        let size = e.size.map(|n| n.to_string());
                        s.push_str(&format!(
                            "{:>8}  {:>10}  {:<20}  {:<24}  {}\n",
                            e.serial,
                            size.as_deref().unwrap_or("-"),
                            e.created.as_deref().unwrap_or("-"),
                            e.who.as_deref().unwrap_or("-"),
                            e.status
                        ));
                    }
                    s
                }
            };
            write_stdout(text.as_bytes())?;
            let unreadable: Vec<_> = entries.iter().filter(|e| e.is_unreadable()).collect();
            if !unreadable.is_empty() {
                for e in &unreadable {
                    eprintln!(
                        "warning: stack {name} version {} is {}: {}",
                        e.serial,
                        e.status,
                        e.problem.as_deref().unwrap_or_default()
                    );
                }
                return Ok(ExitCode::from(1));
            }
        }
        StateCommand::Lock {
            stack,
            operation,
            ttl,
        } => {
            let (store, name) = open_stack(&stack)?;
            let held = store.lock(
                &name,
                &default_who(),
                &operation,
                std::time::Duration::from_secs(ttl),
            )?;
            println!("{}", held.info.id);
            eprintln!(
                "locked stack {name} (expires {}); release with `plumb state unlock --lock-id {}`",
                held.info.expires, held.info.id
            );
        }
        StateCommand::Unlock { stack, lock_id } => {
            let (store, name) = open_stack(&stack)?;
            store.unlock(&name, &lock_id)?;
            eprintln!("unlocked stack {name}");
        }
        StateCommand::ForceUnlock {
            stack,
            keys,
            lock_id,
        } => {
            // The key is needed only to check an interrupted put's version before completing it.
            let keys = load_identities(&keys).unwrap_or_default();
            let (store, name) = open_stack(&stack)?;
            let report = store.force_unlock(&name, &lock_id, &keys)?;
            eprintln!(
                "broke the lock of {} ({:?}, since {}) on stack {name}",
                report.broken.who, report.broken.operation, report.broken.created
            );
            if let Some(serial) = report.completed_serial {
                eprintln!("completed the interrupted put: HEAD is now version {serial}");
            }
        }
        StateCommand::Repair { stack, keys, yes } => {
            let keys = load_identities(&keys)?;
            let (store, name) = open_stack(&stack)?;
            if !yes {
                let plan = store.plan_repair(&name, &keys)?;
                write_stdout(plan.describe().as_bytes())?;
                if plan.is_empty() {
                    return Ok(ExitCode::SUCCESS);
                }
                eprintln!(
                    "nothing was changed: run `plumb state repair --stack {name} --yes` to do this"
                );
                return Ok(ExitCode::from(1));
            }
            let done = store.repair(&name, &keys, &default_who())?;
            write_stdout(done.describe().as_bytes())?;
            if !done.is_empty() {
                eprintln!("repaired stack {name}");
            }
        }
        StateCommand::Serve {
            store,
            keys,
            listen,
            tls_cert,
            tls_key,
            credentials,
            allow_unsafe_store,
            lock_ttl,
        } => serve(ServeArgs {
            store,
            keys,
            listen,
            tls: tls_cert.zip(tls_key),
            credentials,
            allow_unsafe_store,
            lock_ttl,
        })?,
        StateCommand::Probe {
            store,
            output,
            writers,
            rounds,
        } => {
            let store = open_store(&store)
                .map_err(|Failure(e)| Failure(format!("could not test the store: {e}")))?;
            if let Err(e) = reach(store.backend()) {
                return Err(Failure(format!("could not test the store: {e}")));
            }
            let options = ProbeOptions {
                writers: usize::from(writers),
                rounds: usize::from(rounds),
            };
            let report = probe(store.backend(), &options);
            let text = match output {
                Format::Json => report.to_json(),
                Format::Text => probe_text(&report),
            };
            write_stdout(text.as_bytes())?;
            return Ok(if report.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}

struct ServeArgs {
    store: StoreOpt,
    keys: KeyOpt,
    listen: String,
    tls: Option<(PathBuf, PathBuf)>,
    credentials: Option<PathBuf>,
    allow_unsafe_store: bool,
    lock_ttl: u64,
}

fn serve(args: ServeArgs) -> Result<(), Failure> {
    use plumb_state::serve::{Credentials, Log, ServeConfig, Server, TlsFiles};
    use std::net::ToSocketAddrs;
    let keys = load_keys(&args.keys.identities, Some(&args.keys.recipient))?;
    let credentials = match &args.credentials {
        Some(path) => Credentials::from_file(path).map_err(Failure)?,
        None => Credentials::from_env()
            .ok_or_else(|| {
                Failure(
                    "no credentials: set PLUMB_STATE_USERNAME and PLUMB_STATE_PASSWORD, or give                      --credentials FILE (username:password lines); the server refuses every                      request without them"
                        .to_string(),
                )
            })?
            .map_err(Failure)?,
    };
    let listen = args
        .listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| {
            Failure(format!(
                "--listen {:?}: expected ADDRESS:PORT, such as 127.0.0.1:8750",
                args.listen
            ))
        })?;
    let store = open_store(&args.store)?;
    let config = ServeConfig {
        listen,
        tls: args.tls.map(|(cert, key)| TlsFiles { cert, key }),
        credentials,
        keys,
        allow_unsafe_store: args.allow_unsafe_store,
        lock_ttl: std::time::Duration::from_secs(args.lock_ttl),
        probe: ProbeOptions::default(),
    };
    let log: Log = std::sync::Arc::new(|line: &str| {
        // A closed stderr must not stop the server.
        let _ = writeln!(std::io::stderr(), "{line}");
    });
    let server = Server::start(store, config, log).map_err(|e| Failure(e.to_string()))?;
    server
        .run_until_signal()
        .map_err(|e| Failure(e.to_string()))
}

fn probe_text(report: &ProbeReport) -> String {
    let mut s = format!("probe of {}\n", report.store);
    for check in &report.checks {
        let mark = if check.ok { "ok  " } else { "FAIL" };
        s.push_str(&format!("  {mark}  {:<28} {}\n", check.name, check.detail));
    }
    if let Some(e) = &report.cleanup_error {
        s.push_str(&format!(
            "  note: scratch objects were not all removed: {e}\n"
        ));
    }
    let failed = report.failed();
    let passed = report.checks.len() - failed.len();
    if failed.is_empty() {
        s.push_str(&format!("safe: all {passed} properties honoured\n"));
    } else {
        s.push_str(&format!(
            "NOT SAFE for plumb state: {} of {} properties failed: {}\n",
            failed.len(),
            report.checks.len(),
            failed.join(", ")
        ));
    }
    s
}
