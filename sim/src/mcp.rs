//! The MCP tool handler: records each call, applies any injected fault, answers from team
//! state.

use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::Fault;
use crate::state::Shared;
use crate::tools::{self, Kind};

/// The team the bearer token selected, put into the request by the auth middleware.
#[derive(Debug, Clone)]
pub(crate) struct TeamName(pub String);

/// Put into the request when the bearer token is an issued access token that has expired.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SignInExpired;

/// Put into the request when the token's user can only view (a view-only team, or an access
/// token granted without `write`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ViewOnly;

/// Cancelling this token makes the middleware cut the HTTP exchange without an answer.
#[derive(Debug, Clone)]
pub(crate) struct DropSwitch(pub CancellationToken);

#[derive(Clone)]
pub(crate) struct SimMcp {
    pub shared: Arc<Shared>,
    /// Cancelled when the server shuts down, so hung calls let it stop.
    pub shutdown: CancellationToken,
}

fn text_result(text: String, error: bool) -> CallToolResponse {
    let content = vec![ContentBlock::text(text)];
    if error {
        CallToolResult::error(content).into()
    } else {
        CallToolResult::success(content).into()
    }
}

impl SimMcp {
    async fn never_answer(&self, ctx: &RequestContext<RoleServer>) -> ErrorData {
        tokio::select! {
            _ = ctx.ct.cancelled() => {}
            _ = self.shutdown.cancelled() => {}
        }
        ErrorData::internal_error("request abandoned", None)
    }
}

impl ServerHandler for SimMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = tools::TOOLS
            .iter()
            .map(|t| {
                let schema = match (t.schema)() {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                Tool::new(t.name, t.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<Parts>();
        let team = parts.and_then(|p| p.extensions.get::<TeamName>()).cloned();
        let cut = parts
            .and_then(|p| p.extensions.get::<DropSwitch>())
            .cloned();
        let Some(TeamName(team)) = team else {
            // Only reachable if the auth layer was bypassed; refuse rather than guess a team.
            return Err(ErrorData::invalid_request("no team for this request", None));
        };
        let tool = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        if tools::is_write(&tool) && parts.is_some_and(|p| p.extensions.get::<ViewOnly>().is_some())
        {
            // As Epiphan answers a role without the right: in-band, before the tool runs. The
            // call is not recorded, since nothing reached a device.
            return Ok(text_result("Error: 403 Forbidden".into(), true));
        }
        let index = self.shared.record_call(&team, &tool, &args);
        if parts.is_some_and(|p| p.extensions.get::<SignInExpired>().is_some()) {
            self.shared.answered(index);
            return Ok(text_result("Error: 401 Unauthorized".into(), true));
        }

        let Some(def) = tools::find(&tool) else {
            self.shared.answered(index);
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {tool}"),
                None,
            ));
        };
        let fault = self.shared.fault(&tool);
        if let Some(Fault::DelayMs(ms)) = fault {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        let now = self.shared.now();
        match &fault {
            Some(Fault::Fail) => {
                self.shared.answered(index);
                return Ok(text_result("Error: 500 Internal Server Error".into(), true));
            }
            Some(Fault::Unauthorized) => {
                self.shared.answered(index);
                return Ok(text_result("Error: 401 Unauthorized".into(), true));
            }
            Some(Fault::ErrorText(text)) => {
                self.shared.answered(index);
                return Ok(text_result(text.clone(), true));
            }
            Some(Fault::Hang) => return Err(self.never_answer(&context).await),
            Some(Fault::DropAfterWrite | Fault::Text(_) | Fault::DelayMs(_)) | None => {}
        }

        let outcome = self
            .shared
            .with_team(&team, |state| match def.kind {
                Kind::Write => tools::write(state, &tool, &args, now),
                Kind::Read => tools::read(state, &tool, &args, now),
            })
            .unwrap_or_else(|| Err(format!("Error: team {team} is not served")));

        match fault {
            Some(Fault::DropAfterWrite) => {
                if let Some(DropSwitch(cut)) = cut {
                    cut.cancel();
                }
                Err(self.never_answer(&context).await)
            }
            Some(Fault::Text(text)) => {
                self.shared.answered(index);
                Ok(text_result(text, false))
            }
            _ => {
                let response = match outcome {
                    Ok(value) => text_result(value.to_string(), false),
                    Err(text) => text_result(text, true),
                };
                self.shared.answered(index);
                Ok(response)
            }
        }
    }
}
