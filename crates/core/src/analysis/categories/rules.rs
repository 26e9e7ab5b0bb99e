//! Rules users write: ordered keyword or regex patterns over an allocation's frames that set
//! its role and/or component before any inference. Kept as data (serde, so the page can store
//! and export them as JSON); compiled once per edit.
//!
//! Not the place for the inference itself ([`super`]) or for storing rules (the page).

use serde::{Deserialize, Serialize};

use super::{Component, Role};

/// One rule: allocations with a frame (`file:line:function`) matching `pattern` get `role`
/// and/or `component`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// What the user calls the rule (shown in the rule list and the report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub pattern: String,
    /// `pattern` is a regular expression; otherwise a keyword, matched case-insensitively.
    #[serde(default)]
    pub regex: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<Component>,
}

/// The largest rules file read: a list of hand-written patterns is kilobytes, and a file read
/// whole is never allowed to be as large as the machine's memory.
pub const MAX_RULES_BYTES: u64 = 1 << 20;

/// Rules in order: for each dimension, the first matching rule that sets it wins.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rules {
    pub rules: Vec<Rule>,
}

/// A rule that cannot be used, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleError {
    /// Position of the rule in the list, from 0.
    pub index: usize,
    pub message: String,
}

enum Matcher {
    Keyword(String),
    Regex(regex_lite::Regex),
}

/// What the rules say of a stack: each dimension they set, with the position of the rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ruled {
    pub role: Option<(u32, Role)>,
    pub component: Option<(u32, Component)>,
}

/// Rules ready to match frames.
pub struct CompiledRules {
    rules: Vec<(Matcher, Option<Role>, Option<Component>)>,
}

impl Rules {
    /// Compiles every rule; an empty pattern or an invalid regex is an error naming the rule.
    pub fn compile(&self) -> Result<CompiledRules, RuleError> {
        let rules = self
            .rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                if rule.pattern.is_empty() {
                    return Err(RuleError {
                        index,
                        message: "the pattern is empty".into(),
                    });
                }
                let matcher = if rule.regex {
                    regex_lite::Regex::new(&rule.pattern)
                        .map(Matcher::Regex)
                        .map_err(|e| RuleError {
                            index,
                            message: format!("not a valid regular expression: {e}"),
                        })?
                } else {
                    Matcher::Keyword(rule.pattern.to_lowercase())
                };
                Ok((matcher, rule.role, rule.component))
            })
            .collect::<Result<_, _>>()?;
        Ok(CompiledRules { rules })
    }
}

impl CompiledRules {
    pub fn none() -> Self {
        CompiledRules { rules: Vec::new() }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The role and component the rules give a stack of `frames` (each `file:line:function`).
    pub fn apply(&self, frames: &[String]) -> (Option<Role>, Option<Component>) {
        let ruled = self.apply_indexed(frames);
        (ruled.role.map(|(_, r)| r), ruled.component.map(|(_, c)| c))
    }

    /// [`Self::apply`], each with the position of the rule that set it.
    pub fn apply_indexed(&self, frames: &[String]) -> Ruled {
        let mut role = None;
        let mut component = None;
        let mut lowered: Option<Vec<String>> = None;
        for (index, (matcher, r, c)) in self.rules.iter().enumerate() {
            if (role.is_some() || r.is_none()) && (component.is_some() || c.is_none()) {
                continue;
            }
            let hit = match matcher {
                Matcher::Regex(re) => frames.iter().any(|f| re.is_match(f)),
                Matcher::Keyword(k) => lowered
                    .get_or_insert_with(|| frames.iter().map(|f| f.to_lowercase()).collect())
                    .iter()
                    .any(|f| f.contains(k.as_str())),
            };
            if hit {
                let index = index as u32;
                role = role.or(r.map(|r| (index, r)));
                component = component.or(c.map(|c| (index, c)));
            }
        }
        Ruled { role, component }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(pattern: &str, regex: bool, role: Option<Role>, component: Option<Component>) -> Rule {
        Rule {
            name: None,
            pattern: pattern.into(),
            regex,
            role,
            component,
        }
    }

    #[test]
    fn the_first_rule_setting_each_dimension_wins() {
        let rules = Rules {
            rules: vec![
                rule("Attention", false, None, Some(Component::Attention)),
                rule(
                    "model.py",
                    false,
                    Some(Role::Activations),
                    Some(Component::Mlp),
                ),
                rule(r"^train\.py:\d+:", true, Some(Role::Inputs), None),
            ],
        };
        let compiled = rules.compile().unwrap();
        let frames = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            compiled.apply(&frames(&["model.py:10:attention_forward"])),
            (Some(Role::Activations), Some(Component::Attention))
        );
        assert_eq!(
            compiled.apply(&frames(&["train.py:3:main"])),
            (Some(Role::Inputs), None)
        );
        assert_eq!(compiled.apply(&frames(&["other.py:1:f"])), (None, None));
    }

    #[test]
    fn bad_rules_are_named() {
        let bad = Rules {
            rules: vec![
                rule("ok", false, Some(Role::Inputs), None),
                rule("(unclosed", true, Some(Role::Inputs), None),
            ],
        };
        let error = bad.compile().err().unwrap();
        assert_eq!(error.index, 1);
        assert!(
            error.message.contains("regular expression"),
            "{}",
            error.message
        );
        let empty = Rules {
            rules: vec![rule("", false, None, None)],
        };
        assert_eq!(empty.compile().err().unwrap().index, 0);
    }

    #[test]
    fn rules_read_and_write_as_json() {
        let rules: Rules = serde_json::from_str(
            r#"{"rules":[{"pattern":"softmax","role":"activations","component":"attention"},{"pattern":"x","regex":true}]}"#,
        )
        .unwrap();
        assert_eq!(rules.rules[0].role, Some(Role::Activations));
        assert!(rules.rules[1].regex);
        let again: Rules = serde_json::from_str(&serde_json::to_string(&rules).unwrap()).unwrap();
        assert_eq!(again, rules);
    }
}
