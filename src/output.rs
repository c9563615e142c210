//! Structured output: the last `<tag>...</tag>` in the agent's text, code fences stripped,
//! parsed (for `object`) and checked against the JSON Schema. What is wrong comes back as a
//! list of plain sentences, which also make the prompt of a retry.

use crate::manifest::output_plan::OutputPlan;
use crate::manifest::schema::OutputKind;
use serde_json::Value;

pub(crate) struct Checker {
    plan: OutputPlan,
    validator: Option<jsonschema::Validator>,
}

impl Checker {
    pub(crate) fn new(plan: &OutputPlan) -> Result<Checker, jsonschema::ValidationError<'static>> {
        let validator = match &plan.schema {
            Some(schema) => Some(jsonschema::validator_for(schema)?),
            None => None,
        };
        Ok(Checker { plan: plan.clone(), validator })
    }

    /// The value, or what is wrong with the answer.
    pub(crate) fn check(&self, text: &str) -> Result<Value, Vec<String>> {
        let tag = &self.plan.tag;
        let Some(inner) = last_tagged(text, tag) else {
            return Err(vec![format!("the answer has no <{tag}>...</{tag}> block")]);
        };
        let inner = strip_fences(inner);
        let value = match self.plan.kind {
            OutputKind::String => Value::String(inner.to_owned()),
            OutputKind::Object => match serde_json::from_str::<Value>(inner) {
                Ok(value @ Value::Object(_)) => value,
                Ok(_) => return Err(vec![format!("the <{tag}> block must hold a JSON object")]),
                Err(err) => return Err(vec![format!("the <{tag}> block is not valid JSON: {err}")]),
            },
        };
        if let Some(validator) = &self.validator {
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|error| {
                    let at = error.instance_path().to_string();
                    if at.is_empty() {
                        format!("{error}")
                    } else {
                        format!("at {at}: {error}")
                    }
                })
                .collect();
            if !errors.is_empty() {
                return Err(errors);
            }
        }
        Ok(value)
    }

    /// The next prompt after an unusable answer: what was wrong, and the format again.
    pub(crate) fn retry_prompt(&self, errors: &[String]) -> String {
        let tag = &self.plan.tag;
        let what = match self.plan.kind {
            OutputKind::String => "your answer".to_owned(),
            OutputKind::Object => "a single JSON object".to_owned(),
        };
        let schema = match &self.plan.schema {
            Some(schema) => format!(" It must match this JSON Schema:\n{schema}\n"),
            None => String::new(),
        };
        format!(
            "Your answer could not be used:\n{}\nReply again with {what} inside <{tag}>...</{tag}>, and nothing else inside the tags.{schema}",
            errors.iter().map(|e| format!("- {e}")).collect::<Vec<_>>().join("\n")
        )
    }
}

/// The content of the last complete `<tag>...</tag>`.
fn last_tagged<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let end = text.rfind(&close)?;
    let start = text[..end].rfind(&open)? + open.len();
    Some(&text[start..end])
}

/// ```` ```json\n{...}\n``` ```` → `{...}`; anything else trimmed.
fn strip_fences(text: &str) -> &str {
    let trimmed = text.trim();
    if let Some(rest) = trimmed.strip_prefix("```") {
        if let Some(body) = rest.strip_suffix("```") {
            // Drop the info string (`json`) on the opening line.
            return body.split_once('\n').map_or(body, |(_, body)| body).trim();
        }
    }
    trimmed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(kind: OutputKind, schema: Option<Value>) -> OutputPlan {
        OutputPlan { kind, tag: "result".into(), schema_file: None, schema, max_retries: 0 }
    }

    #[test]
    fn takes_the_last_block_and_strips_fences() {
        let checker = Checker::new(&plan(OutputKind::Object, None)).unwrap();
        let text = "first <result>{\"a\": 1}</result>\nthen:\n<result>\n```json\n{\"a\": 2}\n```\n</result> bye";
        assert_eq!(checker.check(text).unwrap(), json!({"a": 2}));
        let checker = Checker::new(&plan(OutputKind::String, None)).unwrap();
        assert_eq!(checker.check("x <result>\n  fine  \n</result>").unwrap(), json!("fine"));
    }

    #[test]
    fn says_what_is_wrong() {
        let schema =
            json!({"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}}});
        let checker = Checker::new(&plan(OutputKind::Object, Some(schema))).unwrap();
        assert_eq!(checker.check("no tags").unwrap_err(), ["the answer has no <result>...</result> block"]);
        assert!(
            checker.check("<result>{oops</result>").unwrap_err()[0].starts_with("the <result> block is not valid JSON")
        );
        assert_eq!(checker.check("<result>[1]</result>").unwrap_err(), ["the <result> block must hold a JSON object"]);
        assert_eq!(
            checker.check("<result>{\"approved\": \"yes\"}</result>").unwrap_err(),
            ["at /approved: \"yes\" is not of type \"boolean\""]
        );
        assert_eq!(checker.check("<result>{}</result>").unwrap_err(), ["\"approved\" is a required property"]);
        assert!(checker
            .retry_prompt(&["x".into()])
            .contains("- x\nReply again with a single JSON object inside <result>...</result>"));
    }
}
