//! The three S3 calls a Bucket fetch makes (HeadBucket, ListObjectsV2, GetObject), signed with
//! object_store's SigV4 signer and sent with blocking reqwest.
//!
//! object_store's `ObjectStore` API is not used for listing and reading: it parses every key
//! into its normalised `Path` (a key with a `..` segment fails the whole listing, a leading or
//! trailing `/` is stripped so `dir/` and `dir` become one), and its list prefix always ends in
//! `/`. A Bucket needs the raw keys, S3's plain string prefix and the ETags exactly as listed,
//! which is what minio-go gives source-controller.

use std::io::Read;
use std::time::Duration;

use object_store::aws::{AwsAuthorizer, AwsCredential};
use object_store::client::HttpRequestBody;
use reqwest::blocking::{Client, Response};
use reqwest::Method;

/// Why an S3 call failed; the caller adds the endpoint and bucket.
#[derive(Debug)]
pub(crate) enum S3Error {
    /// No HTTP answer (connection refused, DNS, TLS, timeout).
    Unreachable(String),
    /// An error answer: the HTTP status and S3's error code and message when it sent one.
    Status {
        status: u16,
        code: String,
        message: String,
    },
}

impl S3Error {
    pub(crate) fn describe(&self) -> String {
        match self {
            S3Error::Unreachable(message) => message.clone(),
            S3Error::Status {
                status,
                code,
                message,
            } => {
                let mut text = format!("HTTP {status}");
                if !code.is_empty() {
                    text.push_str(&format!(" {code}"));
                }
                if !message.is_empty() {
                    text.push_str(&format!(": {message}"));
                }
                text
            }
        }
    }
}

/// One object of a listing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) key: String,
    /// Without the quotes S3 puts around it, as minio-go reports it.
    pub(crate) etag: String,
}

/// A client for one bucket at one endpoint.
pub(crate) struct S3 {
    http: Client,
    /// `http(s)://host[:port]`.
    base: String,
    bucket: String,
    region: String,
    credential: Option<AwsCredential>,
}

impl S3 {
    pub(crate) fn new(
        base: String,
        bucket: String,
        region: String,
        credential: Option<AwsCredential>,
        timeout: Duration,
    ) -> Result<S3, S3Error> {
        let http = crate::tls::configure(Client::builder())
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|e| S3Error::Unreachable(error_text(&e)))?;
        Ok(S3 {
            http,
            base,
            bucket,
            region,
            credential,
        })
    }

    /// The bucket's region from GetBucketLocation (signed for `us-east-1`, which S3 accepts
    /// for this call), as minio-go asks when `spec.region` is empty; `None` when the server
    /// does not say.
    pub(crate) fn bucket_region(&self) -> Option<String> {
        let body = read_text(self.send(Method::GET, "", "location=").ok()?).ok()?;
        location_region(&body)
    }

    /// The same client, signing for `region`.
    pub(crate) fn with_region(self, region: String) -> S3 {
        S3 { region, ..self }
    }

    /// Whether the bucket exists (HeadBucket).
    pub(crate) fn bucket_exists(&self) -> Result<bool, S3Error> {
        match self.send(Method::HEAD, "", "") {
            Ok(_) => Ok(true),
            Err(S3Error::Status { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Every object whose key starts with `prefix`, in the server's (key) order.
    pub(crate) fn list(&self, prefix: &str) -> Result<Vec<Listed>, S3Error> {
        let mut objects = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = format!(
                "list-type=2&encoding-type=url&prefix={}",
                encode(prefix, true)
            );
            if let Some(token) = &token {
                query.push_str(&format!("&continuation-token={}", encode(token, true)));
            }
            let body = read_text(self.send(Method::GET, "", &query)?)?;
            let page = ListPage::parse(&body);
            for (key, etag) in page.contents {
                let key = if page.url_encoded { decode(&key) } else { key };
                objects.push(Listed {
                    key,
                    etag: etag
                        .trim_start_matches('"')
                        .trim_end_matches('"')
                        .to_owned(),
                });
            }
            match page.next {
                Some(next) if page.truncated => token = Some(next),
                _ => return Ok(objects),
            }
        }
    }

    /// The object `key` as a reader and its ETag (unquoted); `None` when there is no such key.
    pub(crate) fn get(&self, key: &str) -> Result<Option<(Response, String)>, S3Error> {
        match self.send(Method::GET, key, "") {
            Ok(response) => {
                let etag = response
                    .headers()
                    .get("etag")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .trim_start_matches('"')
                    .trim_end_matches('"')
                    .to_owned();
                Ok(Some((response, etag)))
            }
            Err(S3Error::Status {
                status: 404, code, ..
            }) if code != "NoSuchBucket" => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Sends one request for the bucket (`key` empty) or an object, path-style, signed when
    /// there are credentials and anonymous otherwise.
    fn send(&self, method: Method, key: &str, query: &str) -> Result<Response, S3Error> {
        let mut url = format!("{}/{}", self.base, encode(&self.bucket, true));
        if !key.is_empty() {
            url.push('/');
            url.push_str(&encode(key, false));
        }
        if !query.is_empty() {
            url.push('?');
            url.push_str(query);
        }
        let mut request = self.http.request(method.clone(), &url);
        if let Some(credential) = &self.credential {
            let mut signed = http::Request::builder()
                .method(method.clone())
                .uri(&url)
                .body(HttpRequestBody::empty())
                .map_err(|e| S3Error::Unreachable(format!("invalid request URL {url}: {e}")))?;
            AwsAuthorizer::new(credential, "s3", &self.region)
                .try_authorize(&mut signed, None)
                .map_err(|e| S3Error::Unreachable(format!("cannot sign the request: {e}")))?;
            request = request.headers(signed.headers().clone());
        }
        let response = request
            .send()
            .map_err(|e| S3Error::Unreachable(error_text(&e)))?;
        let status = response.status().as_u16();
        if response.status().is_success() {
            return Ok(response);
        }
        let body = if method == Method::HEAD {
            String::new()
        } else {
            response.text().unwrap_or_default()
        };
        Err(S3Error::Status {
            status,
            code: element(&body, "Code").unwrap_or_else(|| default_code(status).to_owned()),
            message: element(&body, "Message").unwrap_or_default(),
        })
    }
}

/// The region a GetBucketLocation answer names.
fn location_region(body: &str) -> Option<String> {
    let start = body.find("<LocationConstraint")?;
    let text = &body[start..];
    let open_end = text.find('>')?;
    let value = if text[..open_end].ends_with('/') {
        String::new()
    } else {
        unescape(text[open_end + 1..text.find("</LocationConstraint>")?].trim())
    };
    // An empty constraint is us-east-1; "EU" is S3's legacy name of eu-west-1.
    Some(match value.as_str() {
        "" => "us-east-1".into(),
        "EU" => "eu-west-1".into(),
        other => other.into(),
    })
}

/// HEAD answers have no body: the code S3 would have sent.
fn default_code(status: u16) -> &'static str {
    match status {
        403 => "AccessDenied",
        404 => "NotFound",
        _ => "",
    }
}

fn read_text(mut response: Response) -> Result<String, S3Error> {
    let mut text = String::new();
    response
        .read_to_string(&mut text)
        .map_err(|e| S3Error::Unreachable(format!("reading the answer: {e}")))?;
    Ok(text)
}

/// The parts of a ListObjectsV2 answer a fetch uses.
#[derive(Debug, Default)]
struct ListPage {
    contents: Vec<(String, String)>,
    truncated: bool,
    next: Option<String>,
    url_encoded: bool,
}

impl ListPage {
    /// S3's list XML is flat and regular: `<Contents>` blocks with `<Key>` and `<ETag>`, then
    /// `IsTruncated`, `NextContinuationToken` and `EncodingType` at the top level.
    fn parse(xml: &str) -> ListPage {
        let mut page = ListPage::default();
        let mut rest = xml;
        while let Some(start) = rest.find("<Contents>") {
            let after = &rest[start + "<Contents>".len()..];
            let end = after.find("</Contents>").unwrap_or(after.len());
            let block = &after[..end];
            if let Some(key) = element(block, "Key") {
                page.contents
                    .push((key, element(block, "ETag").unwrap_or_default()));
            }
            rest = &after[end..];
        }
        let top = strip_blocks(xml, "Contents");
        page.truncated = element(&top, "IsTruncated").as_deref() == Some("true");
        page.next = element(&top, "NextContinuationToken");
        page.url_encoded = element(&top, "EncodingType").as_deref() == Some("url");
        page
    }
}

/// `xml` without its `<name>...</name>` blocks.
fn strip_blocks(xml: &str, name: &str) -> String {
    let (open, close) = (format!("<{name}>"), format!("</{name}>"));
    let mut out = String::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        out.push_str(&rest[..start]);
        rest = match rest[start..].find(&close) {
            Some(end) => &rest[start + end + close.len()..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// The unescaped text of the first `<name>` element in `xml`.
fn element(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{name}>"))?;
    Some(unescape(&xml[start..start + end]))
}

/// XML's five entities and numeric character references.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let Some(semi) = after.find(';') else {
            out.push_str(&rest[amp..]);
            return out;
        };
        let entity = &after[..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .map(|hex| u32::from_str_radix(hex, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// AWS's URI encoding: unreserved characters stay, everything else is `%XX`; `/` too when
/// `slash` (query values, bucket names), not in an object key's path.
fn encode(text: &str, slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (b == b'/' && !slash);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A key sent with `encoding-type=url`, decoded as minio-go does (`url.QueryUnescape`: `+` is
/// a space).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An error with its causes, on one line.
fn error_text(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_page_gives_keys_etags_and_the_continuation() {
        let xml = r#"<?xml version="1.0"?><ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>a%2Fb%20c.yaml</Key><ETag>&quot;abc&quot;</ETag><Owner><ID>x</ID></Owner></Contents><Contents><Key>d.yaml</Key><ETag>"def"</ETag></Contents><NextContinuationToken>tok&amp;1</NextContinuationToken><EncodingType>url</EncodingType></ListBucketResult>"#;
        let page = ListPage::parse(xml);
        assert_eq!(
            page.contents,
            vec![
                ("a%2Fb%20c.yaml".to_string(), "\"abc\"".to_string()),
                ("d.yaml".to_string(), "\"def\"".to_string())
            ]
        );
        assert!(page.truncated);
        assert!(page.url_encoded);
        assert_eq!(page.next.as_deref(), Some("tok&1"));
        assert_eq!(decode("a%2Fb%20c+d.yaml"), "a/b c d.yaml");
        assert_eq!(decode("100%"), "100%");
    }

    #[test]
    fn bucket_locations() {
        let xml = |inner: &str| format!(r#"<?xml version="1.0"?>{inner}"#);
        assert_eq!(location_region(&xml(r#"<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">eu-central-1</LocationConstraint>"#)).as_deref(), Some("eu-central-1"));
        assert_eq!(
            location_region(&xml("<LocationConstraint/>")).as_deref(),
            Some("us-east-1")
        );
        assert_eq!(
            location_region(&xml("<LocationConstraint></LocationConstraint>")).as_deref(),
            Some("us-east-1")
        );
        assert_eq!(
            location_region(&xml("<LocationConstraint>EU</LocationConstraint>")).as_deref(),
            Some("eu-west-1")
        );
        assert_eq!(location_region("<Error/>"), None);
    }

    #[test]
    fn keys_are_encoded_for_the_path_and_query() {
        assert_eq!(encode("apps/a b+c.yaml", false), "apps/a%20b%2Bc.yaml");
        assert_eq!(encode("apps/", true), "apps%2F");
        assert_eq!(unescape("&#34;x&#x22;&unknown;"), "\"x\"&unknown;");
    }
}
