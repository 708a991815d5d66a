//! `Describe` and `Status`: read-only answers. `Describe` validates a proposed change with the
//! executor's own policy and reads its targets through the sandbox sign-in, so the assistant,
//! which never holds that sign-in, can bind a proposal to sandbox state.

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::fleet::{self, RoomBlock};
use fleetwatch_protocol::wire::{
    ChannelFacts, Cooling, DescribeRequest, Description, DeviceFacts, EventFacts, LimitsReport,
    MAX_ROOM_CHANNELS, MAX_ROOM_NAME_CHARS, MAX_ROOMS_BYTES, PublisherState, RoomFacts, RoomList,
    StatusReport, StreamFacts, ToolQuorum,
};

use crate::context::Context;
use crate::epiphan::Epiphan;
use crate::{reads, slot, state};

/// Facts about a proposed change's targets.
pub async fn describe(ctx: &Context, request: DescribeRequest) -> Result<Description, Refusal> {
    let entry = ctx
        .policy
        .propose_entry(&request.tool)
        .ok_or(Refusal::ToolNotProposable)?;
    let schema_version = entry.schema_version;
    let policy_digest = ctx
        .policy
        .digest(&request.tool)
        .ok_or(Refusal::ToolNotProposable)?;
    let value = fleetwatch_protocol::canonical::from_str(&request.arguments)
        .and_then(|c| c.to_value())
        .map_err(|_| Refusal::ArgumentsInvalid)?;
    let validated = ctx
        .policy
        .validate(&request.tool, &value)
        .map_err(|e| e.refusal())?;
    let epiphan = ctx.sandbox_session().await?;
    let result = read_facts(
        ctx,
        &epiphan,
        &request,
        validated,
        schema_version,
        policy_digest,
    )
    .await;
    epiphan.close().await;
    result
}

/// The rooms that can be changed: the fenced devices of the sandbox team's list as read now,
/// each by ID, name and channels, names cut to their cap, as many as fit the answer. Nothing
/// else of the list leaves the executor; the assistant redacts the names on arrival.
pub async fn rooms(ctx: &Context) -> Result<RoomList, Refusal> {
    let epiphan = ctx.sandbox_session().await?;
    let result = reads::device_list(&epiphan).await;
    epiphan.close().await;
    let list = result?;
    let fence = &ctx.config.fence;
    let cut = |text: &str| text.chars().take(MAX_ROOM_NAME_CHARS).collect::<String>();
    let mut out = RoomList {
        rooms: Vec::new(),
        left_out: 0,
    };
    let mut bytes = 0_usize;
    // As `Describe` judges a target: on the allowlist, or on the fenced team when only a team
    // ID fences.
    let fenced = list.devices.iter().filter(|d| match &fence.allowlist {
        Some(allowed) => allowed.contains(&d.id),
        None => fence.team_id.is_some(),
    });
    for d in fenced {
        let room = RoomFacts {
            id: d.id.clone(),
            name: cut(&d.name),
            channels: d
                .channels
                .iter()
                .take(MAX_ROOM_CHANNELS)
                .map(|c| (cut(&c.number), cut(&c.name)))
                .collect(),
        };
        // Room by room in the wire's own encoding, so the whole answer stays below a frame.
        let size = room.encoded_len();
        if bytes.saturating_add(size) > MAX_ROOMS_BYTES {
            out.left_out = out.left_out.saturating_add(1);
            continue;
        }
        bytes = bytes.saturating_add(size);
        out.rooms.push(room);
    }
    Ok(out)
}

async fn read_facts(
    ctx: &Context,
    epiphan: &Epiphan,
    request: &DescribeRequest,
    validated: fleetwatch_protocol::policy::Validated,
    schema_version: u32,
    policy_digest: [u8; 32],
) -> Result<Description, Refusal> {
    let mut devices = reads::device_list(epiphan).await?;
    let mut endpoints = Vec::new();
    let stream = match &validated.stream_id {
        Some(id) => {
            endpoints = reads::stream_endpoints(epiphan).await?;
            let found = endpoints.iter().find(|e| e.id.eq_ignore_ascii_case(id));
            Some(StreamFacts {
                id: id.clone(),
                found: found.is_some(),
                name: found.map(|e| e.name.clone()).unwrap_or_default(),
                host: found.map(|e| e.host.clone()).unwrap_or_default(),
                publisher: validated
                    .channel
                    .as_ref()
                    .map_or(PublisherState::Unknown, |c| {
                        publisher_state(&devices, &c.device, &c.number, id)
                    }),
            })
        }
        None => None,
    };
    let now = (ctx.clock)();
    let events = reads::events(epiphan, now).await?;
    let online = reads::online(&devices, &validated.targets);
    if !online.is_empty() {
        let status = reads::recorder_status(epiphan, &online).await?;
        fleet::apply_recorder_status(&mut devices, &status);
    }
    let event_matches = validated
        .event
        .as_ref()
        .map(|event| state::event_matches(&events, event));
    let arguments = serde_json::Value::from(value_of(&validated));
    let disruptive = ctx.policy.is_disruptive(&request.tool, &arguments);
    let lead = ctx.policy.lead_minutes(&request.tool);
    let stops = ctx.policy.stops_recording(&request.tool, &arguments);
    let fence = &ctx.config.fence;
    let found: Vec<String> = validated
        .targets
        .iter()
        .filter(|t| devices.devices.iter().any(|d| &d.id == *t))
        .cloned()
        .collect();
    // Over the targets found, so a card can still say which target is missing; a missing
    // target makes the card deny-only, and Execute refuses it before the fingerprint.
    let fingerprint = state::fingerprint(&devices, &events, &found)?;
    let facts = validated
        .targets
        .iter()
        .map(|id| {
            let allowlisted = match &fence.allowlist {
                Some(list) => list.contains(id),
                None => fence.team_id.is_some(),
            };
            let event = events.get(id).and_then(Option::as_ref);
            match devices.devices.iter().find(|d| &d.id == id) {
                Some(d) => DeviceFacts {
                    id: id.clone(),
                    on_team: true,
                    allowlisted,
                    name: d.name.clone(),
                    model: d.model.clone(),
                    firmware: d.firmware.clone(),
                    newest_firmware: fleet::newest_firmware(&devices, &d.model)
                        .unwrap_or_default()
                        .to_owned(),
                    online: d.online,
                    recording: d.recording(),
                    channels: d
                        .channels
                        .iter()
                        .map(|c| ChannelFacts {
                            number: c.number.clone(),
                            name: c.name.clone(),
                            recording: c.recording,
                            warnings: c.warnings.clone(),
                        })
                        .collect(),
                    event: event.map(|e| EventFacts {
                        id: e.id.clone(),
                        title: e.title.clone(),
                        start: fleet::format_time(e.start),
                        end: e.end.map(fleet::format_time),
                        confirmed: e.confirmed,
                    }),
                    warnings: d.warnings.clone(),
                    block: if disruptive {
                        fleet::room_block(
                            d,
                            event,
                            now,
                            lead,
                            stops,
                            ctx.config.limits.open_event_minutes,
                        )
                    } else {
                        RoomBlock::None
                    },
                },
                None => DeviceFacts {
                    id: id.clone(),
                    on_team: false,
                    allowlisted,
                    name: String::new(),
                    model: String::new(),
                    firmware: String::new(),
                    newest_firmware: String::new(),
                    online: false,
                    recording: false,
                    channels: Vec::new(),
                    event: None,
                    warnings: Vec::new(),
                    block: RoomBlock::None,
                },
            }
        })
        .collect();
    let names = state::signed_names(&devices, &endpoints, &events, &validated);
    Ok(Description {
        names,
        targets: validated.targets.clone(),
        devices: facts,
        stream,
        event_matches,
        fingerprint,
        team_id: devices.team_id.clone(),
        frozen: crate::freeze::holding(&ctx.config.freeze, &request.tool, disruptive, now),
        disruptive,
        policy_digest,
        schema_version,
    })
}

/// What channel `number` of `device` does with destination `stream_id`, from the device list's
/// publishers. Publishers that do not name their destination leave it unknown, never absent.
fn publisher_state(
    devices: &fleet::DeviceList,
    device: &str,
    number: &str,
    stream_id: &str,
) -> PublisherState {
    let Some(channel) = devices
        .devices
        .iter()
        .find(|d| d.id == device)
        .and_then(|d| d.channels.iter().find(|c| c.number == number))
    else {
        return PublisherState::Unknown;
    };
    let mut unnamed = false;
    for publisher in &channel.publishers {
        match &publisher.stream_id {
            Some(id) if id.eq_ignore_ascii_case(stream_id) => {
                return if publisher.active {
                    PublisherState::Running
                } else {
                    PublisherState::Stopped
                };
            }
            Some(_) => {}
            None => unnamed = true,
        }
    }
    if unnamed {
        PublisherState::Unknown
    } else {
        PublisherState::Absent
    }
}

fn value_of(
    validated: &fleetwatch_protocol::policy::Validated,
) -> serde_json::Map<String, serde_json::Value> {
    match validated.arguments.to_value() {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    }
}

/// Version and configuration facts.
pub fn status(ctx: &Context) -> StatusReport {
    // An approver file that no longer loads enrols nobody and verifies nothing; say so.
    let (key_ids, enrolled, approvers) = match ctx.approvers() {
        Ok(file) => (
            file.keys.key_ids(),
            file.passkeys.len(),
            file.passkeys
                .records()
                .iter()
                .take(fleetwatch_protocol::wire::MAX_STATUS_APPROVERS)
                .map(|r| r.to_line())
                .collect(),
        ),
        Err(e) => {
            tracing::error!(error = %e, "the approver file does not load");
            (Vec::new(), 0, Vec::new())
        }
    };
    StatusReport {
        passkeys_enrolled: u32::try_from(enrolled).unwrap_or(u32::MAX),
        approvers,
        trial: ctx.config.passkeys.trial(),
        quorums: quorums(&ctx.config.passkeys, &ctx.policy),
        version: env!("CARGO_PKG_VERSION").to_string(),
        fence_configured: ctx.config.fence.configured(),
        sandbox_sign_in: matches!(
            slot::status(&ctx.config),
            Ok(fleetwatch_signin::SlotStatus::Static
                | fleetwatch_signin::SlotStatus::SignedIn { .. })
        ),
        key_ids,
        policy_digest: ctx.policy.whole_digest(),
        chain_head: ctx.store.head().unwrap_or(crate::audit::GENESIS),
        limits: limits(ctx),
        confirm_origin_not_held: confirm_origin_not_held(ctx),
        freeze: crate::freeze::report(&ctx.config.freeze, (ctx.clock)()),
    }
}

/// What each Execute with passkeys would say now about who holds the confirm origin.
fn confirm_origin_not_held(ctx: &Context) -> Option<String> {
    let passkeys = &ctx.config.passkeys;
    if passkeys.trial() {
        return None;
    }
    let owner = passkeys.origin_owner;
    crate::holder::check(&passkeys.origins, owner)
        .err()
        .map(|why| format!("{why}; only uid {owner} may hold it (passkeys.origin_owner)"))
}

/// The limits and where they stand now.
fn limits(ctx: &Context) -> LimitsReport {
    let limits = &ctx.config.limits;
    let cooldown = i64::from(limits.cooldown_minutes) * 60;
    let (writes_last_hour, resting) = ctx.store.limits_now(cooldown).unwrap_or_else(|e| {
        tracing::error!(error = %e, "limits not read");
        (0, Vec::new())
    });
    LimitsReport {
        cooldown_minutes: limits.cooldown_minutes,
        writes_per_hour: limits.writes_per_hour,
        writes_last_hour,
        open_event_minutes: limits.open_event_minutes,
        cooling: resting
            .into_iter()
            .map(|r| Cooling {
                until: r.changed_at + cooldown,
                device: r.device,
                changed_at: r.changed_at,
            })
            .collect(),
    }
}

/// The passkeys each proposable tool needs, for a calm and for a disruptive change, as the
/// quorum check computes them.
pub fn quorums(
    config: &crate::config::PasskeyConfig,
    policy: &fleetwatch_protocol::policy::Policy,
) -> Vec<ToolQuorum> {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    policy
        .propose_entries()
        .filter(|e| e.schema.is_some())
        .map(|e| ToolQuorum {
            tool: e.name.clone(),
            // A tool that is always disruptive has no calm change, and one that never is has
            // no disruptive change: each reports what its changes need either way.
            calm: count(config.needed(&e.name, e.disruptive && e.disruptive_when.is_none())),
            disruptive: count(config.needed(&e.name, e.disruptive)),
        })
        .collect()
}
