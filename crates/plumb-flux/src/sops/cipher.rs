//! One SOPS value: `ENC[AES256_GCM,data:...,iv:...,tag:...,type:...]`, AES-256-GCM with SOPS's
//! 32-byte nonce, and the typed plaintext it decrypts to.
//!
//! The format follows getsops/sops `aes/cipher.go`: base64 (standard alphabet) ciphertext, IV and
//! 16-byte tag; the additional data is the value's path of keys, each followed by `:`.

use super::SopsError;
use aes_gcm::aead::generic_array::typenum::U32;
use aes_gcm::aead::generic_array::GenericArray;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::aes::Aes256;
use aes_gcm::AesGcm;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use plumb_yaml::Node;
use std::fmt;

/// AES-256-GCM with the 32-byte nonce SOPS uses (Go's `cipher.NewGCMWithNonceSize(c, 32)`).
type SopsAesGcm = AesGcm<Aes256, U32>;

const NONCE_LEN: usize = 32;
const TAG_LEN: usize = 16;

/// A document's 32-byte data key. Zeroed on drop; never printed.
pub(crate) struct DataKey([u8; 32]);

impl DataKey {
    pub(crate) fn from_slice(bytes: &[u8]) -> Option<DataKey> {
        let key: [u8; 32] = bytes.try_into().ok()?;
        Some(DataKey(key))
    }
}

impl Drop for DataKey {
    fn drop(&mut self) {
        for byte in self.0.iter_mut() {
            // Volatile, so the compiler cannot drop the write as dead.
            unsafe { std::ptr::write_volatile(byte, 0) };
        }
    }
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey(<redacted>)")
    }
}

/// A decrypted value, typed by the `type:` field of its `ENC[...]` text.
///
/// Its `Debug` and `Display` never show the plaintext: use [`SecretValue::expose`] or
/// [`SecretValue::to_node`] where the value is really needed, and never log what they return.
#[derive(Clone, PartialEq)]
pub enum SecretValue {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Bytes(Vec<u8>),
    /// A YAML timestamp, which sops 3.10+ encrypts as `type:time`: its RFC 3339 text.
    Time(String),
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretValue::{}(<redacted>)", self.type_name())
    }
}

impl fmt::Display for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl SecretValue {
    /// SOPS's name for the type (`str`, `int`, `float`, `bool`, `bytes`).
    pub fn type_name(&self) -> &'static str {
        match self {
            SecretValue::Str(_) => "str",
            SecretValue::Int(_) => "int",
            SecretValue::Float(_) => "float",
            SecretValue::Bool(_) => "bool",
            SecretValue::Bytes(_) => "bytes",
            SecretValue::Time(_) => "time",
        }
    }

    /// The plaintext as text, written the way SOPS writes it back to YAML.
    pub fn expose(&self) -> String {
        match self {
            SecretValue::Str(s) => s.clone(),
            SecretValue::Int(i) => i.to_string(),
            SecretValue::Float(f) => go_format_float(*f),
            SecretValue::Bool(b) => b.to_string(),
            SecretValue::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            SecretValue::Time(t) => t.clone(),
        }
    }

    /// The YAML node SOPS would write for the value: strings stay strings whatever they look
    /// like, numbers and booleans are plain scalars.
    pub fn to_node(&self) -> Node {
        match self {
            SecretValue::Str(_) | SecretValue::Bytes(_) => Node::string(self.expose()),
            // YAML's spelling of the non-finite floats; Go's `+Inf` would read back as a string.
            SecretValue::Float(f) if f.is_nan() => Node::plain(".nan"),
            SecretValue::Float(f) if f.is_infinite() => {
                Node::plain(if *f > 0.0 { ".inf" } else { "-.inf" })
            }
            _ => Node::plain(self.expose()),
        }
    }

    /// The bytes this value contributes to the MAC (sops `ToBytes`: booleans are `True`/`False`,
    /// a heritage of the Python implementation).
    pub(crate) fn mac_bytes(&self) -> Vec<u8> {
        match self {
            SecretValue::Bool(true) => b"True".to_vec(),
            SecretValue::Bool(false) => b"False".to_vec(),
            SecretValue::Bytes(b) => b.clone(),
            other => other.expose().into_bytes(),
        }
    }
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: the shortest text that reads back as `f`, never in
/// exponent form. Rust's `Display` for `f64` has the same contract apart from the non-finite names.
pub(crate) fn go_format_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{f}")
    }
}

/// The parts of an `ENC[AES256_GCM,...]` value.
struct EncryptedValue {
    data: Vec<u8>,
    iv: Vec<u8>,
    tag: Vec<u8>,
    datatype: String,
}

/// Whether a string looks like a SOPS-encrypted value.
pub fn is_encrypted_value(text: &str) -> bool {
    text.starts_with("ENC[AES256_GCM,") && text.ends_with(']')
}

fn parse(text: &str, path: &str) -> Result<EncryptedValue, SopsError> {
    let malformed = |why: &str| SopsError::MalformedValue {
        path: path.to_string(),
        reason: why.to_string(),
    };
    let inner = text
        .strip_prefix("ENC[AES256_GCM,")
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| malformed("not an ENC[AES256_GCM,...] value"))?;
    let mut fields = inner.split(',');
    let mut field = |name: &str| {
        fields
            .next()
            .and_then(|f| f.strip_prefix(name))
            .ok_or_else(|| malformed(&format!("missing the `{name}` field")))
    };
    let data = field("data:")?;
    let iv = field("iv:")?;
    let tag = field("tag:")?;
    let datatype = field("type:")?;
    let decode = |what: &str, b64: &str| {
        STANDARD
            .decode(b64)
            .map_err(|e| malformed(&format!("{what} is not base64: {e}")))
    };
    Ok(EncryptedValue {
        data: decode("data", data)?,
        iv: decode("iv", iv)?,
        tag: decode("tag", tag)?,
        datatype: datatype.to_string(),
    })
}

/// Decrypts one `ENC[...]` value. `path` is the value's path of keys, as SOPS joins them
/// (`stringData:password:`), and is the AES-GCM additional data: a value moved to another key
/// fails to decrypt.
pub(crate) fn decrypt_value(
    text: &str,
    key: &DataKey,
    path: &str,
) -> Result<SecretValue, SopsError> {
    let shown = path.trim_end_matches(':');
    if text.is_empty() {
        // SOPS leaves empty strings as they are rather than encrypting them.
        return Ok(SecretValue::Str(String::new()));
    }
    let value = parse(text, shown)?;
    let plaintext =
        open(key, &value, path.as_bytes()).map_err(|()| SopsError::ValueAuthentication {
            path: shown.to_string(),
        })?;
    typed(plaintext, &value.datatype, shown)
}

/// Decrypts the stored MAC, whose additional data is the `lastmodified` timestamp.
pub(crate) fn decrypt_mac(
    text: &str,
    key: &DataKey,
    lastmodified: &str,
) -> Result<String, SopsError> {
    let value = parse(text, "sops:mac")?;
    let plaintext =
        open(key, &value, lastmodified.as_bytes()).map_err(|()| SopsError::MacAuthentication)?;
    String::from_utf8(plaintext).map_err(|_| SopsError::MacAuthentication)
}

fn open(key: &DataKey, value: &EncryptedValue, aad: &[u8]) -> Result<Vec<u8>, ()> {
    if value.iv.len() != NONCE_LEN || value.tag.len() != TAG_LEN {
        return Err(());
    }
    let cipher = SopsAesGcm::new(GenericArray::from_slice(&key.0));
    let mut sealed = Vec::with_capacity(value.data.len() + TAG_LEN);
    sealed.extend_from_slice(&value.data);
    sealed.extend_from_slice(&value.tag);
    cipher
        .decrypt(
            GenericArray::from_slice(&value.iv),
            Payload { msg: &sealed, aad },
        )
        .map_err(|_| ())
}

/// The plaintext read as its declared type, as sops's `Decrypt` does with `strconv`.
fn typed(plaintext: Vec<u8>, datatype: &str, path: &str) -> Result<SecretValue, SopsError> {
    let bad_type = || SopsError::BadPlaintext {
        path: path.to_string(),
        datatype: datatype.to_string(),
    };
    if datatype == "bytes" {
        return Ok(SecretValue::Bytes(plaintext));
    }
    let text = String::from_utf8(plaintext).map_err(|_| bad_type())?;
    Ok(match datatype {
        "str" => SecretValue::Str(text),
        "int" | "int64" => SecretValue::Int(text.parse().map_err(|_| bad_type())?),
        "float" => SecretValue::Float(parse_go_float(&text).ok_or_else(bad_type)?),
        "bool" => SecretValue::Bool(parse_go_bool(&text).ok_or_else(bad_type)?),
        "time" => {
            if plumb_yaml::resolve::parse_timestamp(&text).is_none() {
                return Err(bad_type());
            }
            SecretValue::Time(text)
        }
        // A comment only appears in a comment, which the node tree does not carry.
        "comment" => SecretValue::Str(text),
        _ => return Err(bad_type()),
    })
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strconv.ParseFloat` for the texts SOPS writes (decimal, `Inf`, `NaN`).
fn parse_go_float(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => plumb_yaml::resolve::go_parse_float(text),
    }
}

/// Encrypts a value as SOPS does: test support for building documents SOPS itself never wrote
/// (tampered ones, odd types). Real fixtures come from the sops binary.
#[cfg(test)]
pub(crate) fn encrypt_value(
    value: &SecretValue,
    key: &DataKey,
    path: &str,
    iv: [u8; 32],
) -> String {
    let cipher = SopsAesGcm::new(GenericArray::from_slice(&key.0));
    // SOPS encrypts exactly the bytes it hashes (`True`/`False` for booleans).
    let plaintext = value.mac_bytes();
    let sealed = cipher
        .encrypt(
            GenericArray::from_slice(&iv),
            Payload {
                msg: &plaintext,
                aad: path.as_bytes(),
            },
        )
        .expect("AES-GCM encryption of a test value");
    let (data, tag) = sealed.split_at(sealed.len() - TAG_LEN);
    format!(
        "ENC[AES256_GCM,data:{},iv:{},tag:{},type:{}]",
        STANDARD.encode(data),
        STANDARD.encode(iv),
        STANDARD.encode(tag),
        value.type_name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_type_and_binds_the_path() {
        let key = DataKey([7; 32]);
        for value in [
            SecretValue::Str("hello".into()),
            SecretValue::Int(-42),
            SecretValue::Float(0.25),
            SecretValue::Bool(true),
            SecretValue::Bool(false),
            SecretValue::Float(f64::INFINITY),
            SecretValue::Time("2024-01-02T03:04:05+02:00".into()),
        ] {
            let text = encrypt_value(&value, &key, "a:b:", [1; 32]);
            assert!(is_encrypted_value(&text));
            assert_eq!(decrypt_value(&text, &key, "a:b:").unwrap(), value);
            assert!(matches!(
                decrypt_value(&text, &key, "a:c:"),
                Err(SopsError::ValueAuthentication { .. })
            ));
        }
    }

    #[test]
    fn secret_values_never_print_their_plaintext() {
        let value = SecretValue::Str("hunter2".into());
        assert_eq!(format!("{value}"), "<redacted>");
        assert_eq!(format!("{value:?}"), "SecretValue::str(<redacted>)");
        assert_eq!(format!("{:?}", DataKey([1; 32])), "DataKey(<redacted>)");
    }

    #[test]
    fn malformed_values_are_errors_not_panics() {
        let key = DataKey([7; 32]);
        for text in [
            "ENC[AES256_GCM,data:!!,iv:AA==,tag:AA==,type:str]",
            "ENC[AES256_GCM,data:AA==]",
            "ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]",
            "plain text",
        ] {
            assert!(decrypt_value(text, &key, "k:").is_err(), "{text}");
        }
    }

    #[test]
    fn nodes_read_back_as_the_same_type() {
        let inf = SecretValue::Float(f64::NEG_INFINITY).to_node();
        assert_eq!(inf.scalar_value(), Some("-.inf"));
        let number_like = SecretValue::Str("0644".into()).to_node();
        assert_eq!(plumb_yaml::to_json(&number_like).unwrap(), "0644");
        let time = SecretValue::Time("2024-01-02T00:00:00Z".into()).to_node();
        assert_eq!(plumb_yaml::to_json(&time).unwrap(), "2024-01-02T00:00:00Z");
    }

    #[test]
    fn floats_print_as_go_does() {
        assert_eq!(go_format_float(2.0), "2");
        assert_eq!(go_format_float(0.1), "0.1");
        assert_eq!(go_format_float(1e21), "1000000000000000000000");
        assert_eq!(go_format_float(f64::NEG_INFINITY), "-Inf");
    }
}
