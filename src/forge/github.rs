//! GitHub's REST API (and GitHub Enterprise Server's, at `https://HOST/api/v3`), as the
//! pull-request loop uses it: conditional requests (`If-None-Match`: an unchanged answer costs
//! no rate limit), `Retry-After` and `X-RateLimit-*` waited out, pages followed through `Link`,
//! and each refusal turned into an error that says what to fix. The token goes in the
//! `Authorization` header of requests to the API's own origin only: a job log's download is a
//! redirect elsewhere, which the client follows without it. Names, URLs and logins in an answer
//! are made plain text here, where they enter eden.

use super::api::{
    Check, CheckState, Forge, MergeMethod, NewPullRequest, PullRequest, Requests, Review, ReviewComment, Target,
};
use super::text::plain_line;
use crate::error::Error;
use crate::net::http::{Client, HttpError, Method, Request, Response};
use crate::values::BaseUrl;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::HashMap;
use std::time::Duration;

/// How many answers the ETag cache keeps (one per URL polled).
const CACHED: usize = 256;
/// How many times one request waits out a rate limit before eden gives up.
const RATE_LIMIT_WAITS: usize = 4;
/// The longest one wait for a rate limit may be.
const LONGEST_WAIT: Duration = Duration::from_secs(3600);

/// The git host of the repositories an API serves: `github.com` for `api.github.com`; the
/// API's own host otherwise (GitHub Enterprise Server serves both on one).
pub(crate) fn git_host(api: &BaseUrl) -> String {
    match api.host.as_str() {
        "api.github.com" => "github.com".to_owned(),
        _ => api.authority(),
    }
}

pub(crate) fn open(target: &Target) -> Result<Box<dyn Forge>, Error> {
    let tls = crate::net::connect::client_config(target.api_url.tls)?;
    let client = Client::new(tls, Duration::from_secs(60)).max_body(32 << 20);
    Ok(Box::new(GitHub { target: target.clone(), client, cache: HashMap::new(), requests: Requests::default() }))
}

struct GitHub {
    target: Target,
    client: Client,
    /// URL → the last answer's ETag, body and next page.
    cache: HashMap<String, Cached>,
    requests: Requests,
}

struct Cached {
    etag: String,
    body: Vec<u8>,
    next: Option<String>,
}

impl GitHub {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.target.api_url.url())
    }

    fn repo(&self, rest: &str) -> String {
        let repository = &self.target.repository;
        self.url(&format!("/repos/{}/{}{rest}", repository.owner, repository.name))
    }

    fn headers(&self) -> Vec<(String, String)> {
        vec![
            ("Authorization".to_owned(), format!("Bearer {}", self.target.token.0)),
            ("Accept".to_owned(), "application/vnd.github+json".to_owned()),
            ("X-GitHub-Api-Version".to_owned(), "2022-11-28".to_owned()),
            ("User-Agent".to_owned(), concat!("eden/", env!("CARGO_PKG_VERSION")).to_owned()),
        ]
    }

    /// One request, its rate limits waited out: the answer, whatever its status.
    fn exchange(
        &mut self,
        method: Method,
        url: &str,
        extra: &[(String, String)],
        body: &[u8],
    ) -> Result<Response, Error> {
        let mut headers = self.headers();
        headers.extend(extra.iter().cloned());
        if !body.is_empty() {
            headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
        }
        for _ in 0..=RATE_LIMIT_WAITS {
            let request = Request { method, url, headers: headers.clone(), body };
            self.requests.sent += 1;
            let response = self.client.exchange(&request).map_err(|err| unreachable_api(&self.target, &err))?;
            match rate_limited(&response) {
                Some(wait) => crate::process::sleep_unless_stopped(wait)?,
                None => return Ok(response),
            }
        }
        Err(Error::forge(format!("the forge's rate limit did not lift after {RATE_LIMIT_WAITS} waits"))
            .with_hint("wait for the limit to reset (`X-RateLimit-Reset`), then `eden pr follow RUN`"))
    }

    /// A GET answered from the cache when the forge says nothing changed: the body and the
    /// next page's URL.
    fn get(&mut self, url: &str) -> Result<(Vec<u8>, Option<String>), Error> {
        let conditional: Vec<(String, String)> =
            self.cache.get(url).map(|cached| ("If-None-Match".to_owned(), cached.etag.clone())).into_iter().collect();
        let response = self.exchange(Method::Get, url, &conditional, &[])?;
        if response.status == 304 {
            if let Some(cached) = self.cache.get(url) {
                self.requests.not_modified += 1;
                return Ok((cached.body.clone(), cached.next.clone()));
            }
        }
        let response = refused(&self.target, response)?;
        let next = next_page(&response, &self.target.api_url);
        if let Some(etag) = response.header("ETag") {
            if self.cache.len() >= CACHED {
                self.cache.clear();
            }
            let cached = Cached { etag: etag.to_owned(), body: response.body.clone(), next: next.clone() };
            self.cache.insert(url.to_owned(), cached);
        }
        Ok((response.body, next))
    }

    fn get_json<T: DeserializeOwned>(&mut self, url: &str) -> Result<T, Error> {
        let (body, _) = self.get(url)?;
        parse(&body, url)
    }

    /// Every page of a list.
    fn get_pages<T: DeserializeOwned>(&mut self, url: &str, max_pages: usize) -> Result<Vec<T>, Error> {
        let mut all = Vec::new();
        let mut next = Some(url.to_owned());
        for _ in 0..max_pages {
            let Some(url) = next.take() else { break };
            let (body, following) = self.get(&url)?;
            all.extend(parse::<Vec<T>>(&body, &url)?);
            next = following;
        }
        Ok(all)
    }

    fn send_json(&mut self, method: Method, url: &str, body: &serde_json::Value) -> Result<Response, Error> {
        let body = serde_json::to_vec(body).expect("JSON values serialize");
        let response = self.exchange(method, url, &[], &body)?;
        refused(&self.target, response)
    }
}

impl Forge for GitHub {
    fn repository(&mut self) -> Result<(), Error> {
        let url = self.repo("");
        self.get(&url).map(drop)
    }

    fn find_open(&mut self, branch: &str) -> Result<Option<PullRequest>, Error> {
        let owner = &self.target.repository.owner;
        let url = self.repo(&format!("/pulls?head={}&state=open&per_page=100", query(&format!("{owner}:{branch}"))));
        let found: Vec<Pull> = self.get_json(&url)?;
        Ok(found.into_iter().find(|pull| pull.head.ref_ == branch).map(Pull::into_pull_request))
    }

    fn open(&mut self, new: &NewPullRequest<'_>) -> Result<PullRequest, Error> {
        let body = serde_json::json!({
            "title": new.title, "head": new.head, "base": new.base, "body": new.body, "draft": new.draft,
        });
        let url = self.repo("/pulls");
        let response = self.send_json(Method::Post, &url, &body)?;
        Ok(parse::<Pull>(&response.body, &url)?.into_pull_request())
    }

    fn pull(&mut self, number: u64) -> Result<PullRequest, Error> {
        let url = self.repo(&format!("/pulls/{number}"));
        Ok(self.get_json::<Pull>(&url)?.into_pull_request())
    }

    fn checks(&mut self, sha: &str) -> Result<Vec<Check>, Error> {
        let url = self.repo(&format!("/commits/{sha}/check-runs?per_page=100"));
        let runs: CheckRuns = self.get_json(&url)?;
        let mut checks: Vec<Check> = runs.check_runs.into_iter().map(CheckRun::into_check).collect();
        let url = self.repo(&format!("/commits/{sha}/status?per_page=100"));
        let combined: CombinedStatus = self.get_json(&url)?;
        checks.extend(combined.statuses.into_iter().map(Status::into_check));
        Ok(checks)
    }

    fn reviews(&mut self, number: u64) -> Result<Vec<Review>, Error> {
        let url = self.repo(&format!("/pulls/{number}/reviews?per_page=100"));
        let reviews: Vec<ReviewJson> = self.get_pages(&url, 10)?;
        Ok(reviews.into_iter().map(ReviewJson::into_review).collect())
    }

    fn review_comments(&mut self, number: u64) -> Result<Vec<ReviewComment>, Error> {
        let url = self.repo(&format!("/pulls/{number}/comments?per_page=100"));
        let comments: Vec<CommentJson> = self.get_pages(&url, 10)?;
        Ok(comments.into_iter().map(CommentJson::into_comment).collect())
    }

    fn job_log(&mut self, check: &Check, limit: usize) -> Result<Option<Vec<u8>>, Error> {
        let Some(job) = check.job else { return Ok(None) };
        let url = self.repo(&format!("/actions/jobs/{job}/logs"));
        // The API answers with a redirect to a short-lived download elsewhere: the client
        // follows it without the token.
        let response = self.exchange(Method::Get, &url, &[], &[])?;
        match response.status {
            200..=299 => {
                let body = response.body;
                Ok(Some(body[body.len().saturating_sub(limit)..].to_vec()))
            }
            // Not an Actions job, or its log is gone: the check's own output is what there is.
            404 | 410 => Ok(None),
            _ => refused(&self.target, response).map(|_| None),
        }
    }

    fn comment(&mut self, number: u64, body: &str) -> Result<(), Error> {
        let url = self.repo(&format!("/issues/{number}/comments"));
        self.send_json(Method::Post, &url, &serde_json::json!({ "body": body })).map(drop)
    }

    fn add_labels(&mut self, number: u64, labels: &[String]) -> Result<(), Error> {
        let url = self.repo(&format!("/issues/{number}/labels"));
        self.send_json(Method::Post, &url, &serde_json::json!({ "labels": labels })).map(drop)
    }

    fn merge(&mut self, number: u64, method: MergeMethod, sha: &str) -> Result<(), Error> {
        let url = self.repo(&format!("/pulls/{number}/merge"));
        let body = serde_json::json!({ "merge_method": method.as_str(), "sha": sha });
        self.send_json(Method::Put, &url, &body).map(drop)
    }

    fn branch_tip(&mut self, branch: &str) -> Result<Option<String>, Error> {
        let url = self.repo(&format!("/branches/{}", query(branch)));
        let response = self.exchange(Method::Get, &url, &[], &[])?;
        if response.status == 404 {
            return Ok(None);
        }
        let response = refused(&self.target, response)?;
        Ok(Some(parse::<BranchJson>(&response.body, &url)?.commit.sha))
    }

    fn requests(&self) -> Requests {
        self.requests
    }
}

/// How long to wait before asking again, when the answer is a rate limit's.
fn rate_limited(response: &Response) -> Option<Duration> {
    if !matches!(response.status, 403 | 429) {
        return None;
    }
    if let Some(seconds) = response.header("Retry-After").and_then(|value| value.trim().parse::<u64>().ok()) {
        return Some(Duration::from_secs(seconds).min(LONGEST_WAIT));
    }
    if response.header("X-RateLimit-Remaining").map(str::trim) == Some("0") {
        let reset = response.header("X-RateLimit-Reset").and_then(|value| value.trim().parse::<u64>().ok());
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |now| now.as_secs());
        let wait = reset.map_or(60, |reset| reset.saturating_sub(now) + 1);
        return Some(Duration::from_secs(wait).min(LONGEST_WAIT));
    }
    // A secondary limit without a word on how long: a minute, as GitHub's docs advise.
    (response.status == 429).then_some(Duration::from_secs(60))
}

/// A 2xx answer, or the error that says what the forge refused and what to do.
fn refused(target: &Target, response: Response) -> Result<Response, Error> {
    let status = response.status;
    if (200..=299).contains(&status) {
        return Ok(response);
    }
    let said = said(&response.body);
    let api = target.api_url.url();
    let repository = &target.repository;
    let error = match status {
        401 => Error::forge(format!("{api} refused eden's token (401 {said})"))
            .with_hint("the token is missing, expired or revoked: set `GITHUB_TOKEN` (or `[forge] token`) to a valid one"),
        403 => Error::forge(format!("{api} refused the request on `{repository}` (403 {said})")).with_hint(
            "the token lacks a permission: it needs `contents: write`, `pull-requests: write`, `checks: read` and `actions: read` on the repository",
        ),
        404 => Error::forge(format!("`{repository}` was not found at {api}, or the token cannot see it (404 {said})"))
            .with_hint("check `[forge] repository` (or the push remote's URL) and that the token has access to it"),
        _ => Error::forge(format!("{api} answered {status}: {said}"))
            .with_hint("see what the forge said above; nothing was changed on it by this request"),
    };
    Err(error)
}

/// The `message` (and the first error's) of a GitHub error body, as plain text.
fn said(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Said {
        #[serde(default)]
        message: String,
        #[serde(default)]
        errors: Vec<serde_json::Value>,
    }
    let Ok(said) = serde_json::from_slice::<Said>(body) else {
        return plain_line(&String::from_utf8_lossy(body), 200);
    };
    let detail = said.errors.first().map(|error| match error {
        serde_json::Value::String(text) => text.clone(),
        other => other.get("message").and_then(|m| m.as_str()).map(str::to_owned).unwrap_or_else(|| other.to_string()),
    });
    let text = match detail {
        Some(detail) => format!("{}: {detail}", said.message),
        None => said.message,
    };
    plain_line(&text, 300)
}

fn unreachable_api(target: &Target, err: &HttpError) -> Error {
    Error::forge(format!("cannot reach the forge's API at {}: {err}", target.api_url.url()))
        .with_hint("check `[forge] api_url` (or `GITHUB_API_URL`) and the network; nothing was changed on the forge")
}

fn parse<T: DeserializeOwned>(body: &[u8], url: &str) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|err| {
        Error::forge(format!(
            "the forge's answer to `{}` is not what eden reads: {err}",
            url.split('?').next().unwrap_or(url)
        ))
        .with_hint("is `[forge] api_url` a GitHub API? (`https://api.github.com`, or `https://HOST/api/v3`)")
    })
}

/// The `Link` header's `rel="next"` URL, when it stays on the API's origin.
fn next_page(response: &Response, api: &BaseUrl) -> Option<String> {
    let link = response.header("Link")?;
    let next = link.split(',').find(|part| part.contains("rel=\"next\""))?;
    let url = next.split(';').next()?.trim().trim_start_matches('<').trim_end_matches('>');
    let same = BaseUrl::parse(url).is_some_and(|at| at.tls == api.tls && at.host == api.host && at.port == api.port);
    same.then(|| url.to_owned())
}

/// `text` percent-encoded for a query or a path segment.
fn query(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[derive(Deserialize)]
struct Pull {
    number: u64,
    #[serde(default)]
    html_url: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    merged: bool,
    #[serde(default)]
    mergeable: Option<bool>,
    #[serde(default)]
    mergeable_state: Option<String>,
    head: GitRef,
    base: GitRef,
}

#[derive(Deserialize)]
struct GitRef {
    #[serde(rename = "ref")]
    ref_: String,
    #[serde(default)]
    sha: String,
}

impl Pull {
    fn into_pull_request(self) -> PullRequest {
        PullRequest {
            number: self.number,
            url: plain_line(&self.html_url, 300),
            head_sha: self.head.sha,
            head_branch: self.head.ref_,
            base: self.base.ref_,
            state: self.state,
            merged: self.merged,
            mergeable: self.mergeable,
            mergeable_state: self.mergeable_state,
        }
    }
}

#[derive(Deserialize)]
struct CheckRuns {
    #[serde(default)]
    check_runs: Vec<CheckRun>,
}

#[derive(Deserialize)]
struct CheckRun {
    id: u64,
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default)]
    details_url: Option<String>,
    #[serde(default)]
    output: Option<CheckOutput>,
    #[serde(default)]
    app: Option<App>,
}

#[derive(Deserialize, Default)]
struct CheckOutput {
    title: Option<String>,
    summary: Option<String>,
    text: Option<String>,
}

#[derive(Deserialize)]
struct App {
    #[serde(default)]
    slug: String,
}

impl CheckRun {
    fn into_check(self) -> Check {
        let conclusion = self.conclusion.unwrap_or_default();
        let state = match (self.status.as_str(), conclusion.as_str()) {
            ("completed", "success" | "neutral" | "skipped") => CheckState::Passed,
            ("completed", _) => CheckState::Failed,
            _ => CheckState::Pending,
        };
        let output = self.output.unwrap_or_default();
        let output = [output.title, output.summary, output.text].into_iter().flatten().collect::<Vec<_>>().join("\n");
        // Only an Actions job's id names a log the API serves.
        let actions = self.app.as_ref().is_some_and(|app| app.slug == "github-actions");
        let conclusion = if conclusion.is_empty() { self.status } else { conclusion };
        Check {
            name: plain_line(&self.name, 200),
            state,
            conclusion: plain_line(&conclusion, 40),
            job: actions.then_some(self.id),
            output,
            details_url: self.details_url,
        }
    }
}

#[derive(Deserialize)]
struct CombinedStatus {
    #[serde(default)]
    statuses: Vec<Status>,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    context: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    target_url: Option<String>,
}

impl Status {
    fn into_check(self) -> Check {
        let state = match self.state.as_str() {
            "success" => CheckState::Passed,
            "failure" | "error" => CheckState::Failed,
            _ => CheckState::Pending,
        };
        Check {
            name: plain_line(&self.context, 200),
            state,
            conclusion: plain_line(&self.state, 40),
            job: None,
            output: self.description.unwrap_or_default(),
            details_url: self.target_url,
        }
    }
}

#[derive(Deserialize)]
struct ReviewJson {
    id: u64,
    #[serde(default)]
    state: String,
    #[serde(default)]
    commit_id: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<User>,
}

#[derive(Deserialize)]
struct User {
    #[serde(default)]
    login: String,
}

impl ReviewJson {
    fn into_review(self) -> Review {
        Review {
            id: self.id,
            state: self.state,
            commit: self.commit_id.unwrap_or_default(),
            user: plain_line(&self.user.map(|user| user.login).unwrap_or_default(), 100),
            body: self.body.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize)]
struct CommentJson {
    #[serde(default)]
    pull_request_review_id: Option<u64>,
    #[serde(default)]
    path: String,
    #[serde(default)]
    line: Option<u64>,
    #[serde(default)]
    original_line: Option<u64>,
    #[serde(default)]
    body: String,
}

impl CommentJson {
    fn into_comment(self) -> ReviewComment {
        ReviewComment {
            review: self.pull_request_review_id,
            path: plain_line(&self.path, 300),
            line: self.line.or(self.original_line),
            body: self.body,
        }
    }
}

#[derive(Deserialize)]
struct BranchJson {
    commit: BranchCommit,
}

#[derive(Deserialize)]
struct BranchCommit {
    sha: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)]) -> Response {
        Response {
            status,
            reason: String::new(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn rate_limits_are_waited_out_as_the_forge_says() {
        assert_eq!(rate_limited(&answer(403, &[("Retry-After", "7")])), Some(Duration::from_secs(7)));
        assert_eq!(rate_limited(&answer(429, &[])), Some(Duration::from_secs(60)));
        let soon = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 5;
        let wait =
            rate_limited(&answer(403, &[("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", &soon.to_string())]));
        assert!(wait.is_some_and(|wait| wait <= Duration::from_secs(6) && wait >= Duration::from_secs(4)), "{wait:?}");
        assert_eq!(rate_limited(&answer(403, &[("X-RateLimit-Remaining", "12")])), None, "a plain refusal");
        assert_eq!(rate_limited(&answer(200, &[("Retry-After", "7")])), None);
        assert_eq!(rate_limited(&answer(403, &[("Retry-After", "999999")])), Some(LONGEST_WAIT));
    }

    #[test]
    fn the_next_page_stays_on_the_api() {
        let api = BaseUrl::parse("https://api.github.com").unwrap();
        let link = r#"<https://api.github.com/repos/o/r/pulls/1/comments?page=2>; rel="next", <https://api.github.com/x?page=9>; rel="last""#;
        let next = next_page(&answer(200, &[("Link", link)]), &api);
        assert_eq!(next.as_deref(), Some("https://api.github.com/repos/o/r/pulls/1/comments?page=2"));
        let elsewhere = r#"<https://evil.example/steal?page=2>; rel="next""#;
        assert_eq!(next_page(&answer(200, &[("Link", elsewhere)]), &api), None);
    }

    #[test]
    fn the_git_host_of_an_api() {
        assert_eq!(git_host(&BaseUrl::parse("https://api.github.com").unwrap()), "github.com");
        assert_eq!(git_host(&BaseUrl::parse("https://ghe.corp/api/v3").unwrap()), "ghe.corp");
        assert_eq!(git_host(&BaseUrl::parse("http://127.0.0.1:4000").unwrap()), "127.0.0.1:4000");
    }

    #[test]
    fn a_forges_word_is_plain_text() {
        let body = br#"{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"base \u001b[31minvalid"}]}"#;
        assert_eq!(said(body), "Validation Failed: base invalid");
    }
}
