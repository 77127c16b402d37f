//! What the model replies and what becomes of it: an unusable reply (not JSON, malformed
//! arguments, no tool call) is a `parse_failure` the model is told about, three in a row
//! end the run with `exit_format`; a model without function calling can write its calls
//! as JSON in text; every deliberation carries the raw output and the parsed actions.

use bench_schemas::{DeliberationStatus, ExitStatus};
use benchstream_tests::{OpenAiServer, Reply};
use serde_json::Value;

use super::{
    agent_requests, contents, fixture, models, provider, reference_replies, reference_solution,
    run, TASK,
};

fn malformed_call() -> Reply {
    Reply::message(None, &[("bash", r#"{"command": "ls"#)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_unparseable_replies_in_a_row_end_the_run_with_exit_format() {
    let server = OpenAiServer::with_replies(
        models(),
        [
            Reply::raw("{not json"),
            malformed_call(),
            Reply::text("The bug is in slugify.py, I am fairly sure."),
        ],
    );

    let finished = run(fixture("raw"), provider(&server)).await;

    let deliberations = finished.deliberations();
    assert_eq!(deliberations.len(), 3);
    assert!(deliberations
        .iter()
        .all(|d| d.status == DeliberationStatus::ParseFailure && d.actions.is_empty()));
    assert_eq!(deliberations[0].raw_output, "{not json");
    let result = &finished.summary.result;
    assert_eq!(result.exit_status, ExitStatus::ExitFormat, "{result:?}");

    let requests = agent_requests(&server);
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[0]["messages"], requests[1]["messages"],
        "an unreadable body adds nothing to the conversation"
    );
    let told = contents(&requests[2], "tool");
    assert!(told[0].contains("not valid JSON"), "{told:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_recovers_from_a_malformed_call() {
    let mut replies = reference_replies(TASK);
    replies.insert(1, malformed_call());
    let server = OpenAiServer::with_replies(models(), replies);

    let finished = run(fixture("raw"), provider(&server)).await;

    let statuses: Vec<_> = finished.deliberations().iter().map(|d| d.status).collect();
    assert_eq!(statuses[1], DeliberationStatus::ParseFailure);
    assert!(statuses
        .iter()
        .enumerate()
        .all(|(i, s)| i == 1 || *s == DeliberationStatus::Ok));
    assert_eq!(finished.summary.result.success, Some(true));
    let after = &agent_requests(&server)[2];
    assert!(contents(after, "tool")
        .iter()
        .any(|t| t.contains("not valid JSON")));
    assert!(contents(after, "user")
        .iter()
        .any(|t| t.contains("did not contain a usable tool call")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_calls_in_text_work_without_function_calling() {
    let replies = reference_solution(TASK).into_iter().map(|step| {
        let mut call = step.args;
        call.insert("tool".to_owned(), Value::String(step.tool));
        Reply::text(&format!(
            "Next step:\n```json\n{}\n```",
            Value::Object(call)
        ))
    });
    let server = OpenAiServer::with_replies(models(), replies);

    let finished = run(fixture("raw"), provider(&server)).await;

    assert_eq!(
        finished.summary.result.success,
        Some(true),
        "{:?}",
        finished.summary.result
    );
    let first = finished.deliberations()[0];
    assert_eq!(first.status, DeliberationStatus::Ok);
    assert_eq!(
        (
            first.actions[0].action_type.as_str(),
            first.actions[0].target.as_str()
        ),
        ("view", "slugify.py")
    );
    assert!(first.raw_output.contains("Next step"));
    let second = &agent_requests(&server)[1];
    assert!(
        contents(second, "user")
            .iter()
            .any(|c| c.starts_with("Result of `view`:") && c.contains("def slugify")),
        "the observation comes back as a user message"
    );
}
