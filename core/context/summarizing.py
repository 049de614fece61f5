"""Summarization: when the policy fires, how much to summarize, making a summary record, folding the chain when it
is deep or full, undoing the latest, and checking what of the originals the model still sees."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from itertools import accumulate

from ..model.counted import counted
from ..model.messages import Message
from ..model.records import CoveredMessage, Facets, SummaryRecord, TrailCoverage, through_folds
from ..model.tokens import MESSAGE_OVERHEAD
from ..summary.digest import digest_room, is_conversation, is_digest, merged_digest, session_date
from ..summary.facets import merge_facets
from ..summary.redact import redact, redact_obj, secrets_in
from ..summary.summarizers import RULES, RuleSummarizer, Summarizer, SummaryDraft, SummaryRequest, fit_text
from ..summary.summary_block import render_artifact_trail
from ..summary.trail_coverage import TrailFacts, check_facts, collect_facts, union_facts
from .archive import Archive, summary_message
from .cutting import EXCHANGE_SHARE, call_positions, exchange_start
from .events import EngineEvent, IntegrityError, NothingToSummarize, NothingToUndo, SummaryNotSmaller
from .prompt import PromptAssembler
from .usage import ContextSetup, UsageMeter

log = logging.getLogger("precis.engine")

# Below this much room a summary is replaced by a marker.
MIN_SUMMARY_ROOM = 50
# A merge leaves this much for the next summary where it can: less would merge again at once (see _summarize).
NEXT_SUMMARY_ROOM = 4 * MIN_SUMMARY_ROOM


def next_room(room: int) -> int:
    """What a merge leaves the next summary of the chain's `room`: a sixteenth, or NEXT_SUMMARY_ROOM, but never
    more than a quarter (in a small room, 200 tokens left the merge too little: SWE-agent's sessions at 4k)."""
    return min(max(room // 16, NEXT_SUMMARY_ROOM), room // 4)


# The marker left where there was no room for a summary; stored before it said "1 message", it said "1 messages".
_MARKER = re.compile(r"\[[\d,]+ earlier messages? archived; no room for a summary\]")


def no_room_marker(archived: int) -> str:
    """The summary's text where there was no room for one: how many messages it archived."""
    return f"[{counted(archived, 'earlier message')} archived; no room for a summary]"


def is_marker(text: str) -> bool:
    """Whether a summary's text is the marker left where there was no room for one: no summary of any kind."""
    return _MARKER.fullmatch(text) is not None
# To choose how much to summarize for the target fill, a summary is expected at this share of what it replaces
# (rule summaries of the shared transcripts and conversations measure 0.02-0.24, median about 0.12).
EXPECTED_SUMMARY_SHARE = 0.25


class Summarization:
    def __init__(self, setup: ContextSetup, archive: Archive, meter: UsageMeter, assembler: PromptAssembler):
        self.setup = setup
        self.archive = archive
        self.meter = meter
        self.assembler = assembler
        # The hysteresis: armed until a summary fires, re-armed below reset_ratio or after rearm_messages.
        self.armed = True
        self.since_summary = 0
        # The message whose tool calls are being run: appended live (ContextEngine.append with auto) and still the
        # newest, its results due next. None in a chat opened or imported: no call of it is running any more.
        self.running_calls: str | None = None
        self._facts: dict[str, TrailFacts] = {}
        self._listeners: list[Callable[[EngineEvent], None]] = []

    def restored(self) -> None:
        """After the archive is loaded: trail coverage for records that lack it, and messages since the last summary."""
        archive = self.archive
        for record in archive.chain:
            if record.trail_coverage is None:  # e.g. a summary imported from another tool
                self.check_coverage(record)
        last = max((archive.position.get(mid, -1) for mid in archive.covered_by), default=-1)
        self.since_summary = len(archive.messages) - 1 - last if archive.chain else len(archive.messages)

    # ----- when -----------------------------------------------------------------------------------------------

    def summary_due(self, next_message: bool = False) -> str | None:
        """Why an automatic summary is due now (with `next_message`: once the user's next message is added), or
        None. Only a question: maybe_summarize moves the hysteresis."""
        return self._due(self._ratio(), next_message)[0]

    def _ratio(self) -> float:
        """The usage ratio the policy acts on: without recall, nor what no summary can make room for."""
        usage = self.meter.usage(recall=False)
        # Only a prompt over its budget can hold a message larger than the room in it.
        beyond = self.assembler.beyond_any_room() if usage.ratio > 1 else 0
        return usage.ratio - self.setup.counter.calibrated(beyond) / usage.available if beyond else usage.ratio

    def _due(self, ratio: float, next_message: bool = False) -> tuple[str | None, bool]:
        """(why a summary is due at this usage ratio, or None; whether the policy is armed once it is seen)."""
        policy = self.setup.policy
        if not policy.enabled:
            return None, self.armed
        armed = self.armed or ratio < policy.reset_ratio or self.since_summary >= policy.rearm_messages
        messages = self.archive.messages
        if messages and messages[-1].id == self.running_calls and not next_message:
            # The call's results come next, before the model is asked anything: summarizing now could only take
            # what precedes the call (a call is never parted from its results), a stretch of two or three messages.
            # Only while the call runs: an imported chat ending on a call (sweagent_1) waited for ever at 219%.
            return None, armed
        if ratio >= 1.0 and not self.assembler.fits_by_shrinking_old_outputs():
            # Over the budget the tail may shrink to min_recent, so fewer messages still leave something to take.
            return ("overflow" if self.candidates(policy.min_recent) else None), armed
        if ratio < policy.trigger_ratio or not armed or not self.candidates(policy.keep_recent):
            return None, armed
        if len(self.archive.visible()) < policy.min_messages or self.since_summary < policy.cooldown_messages:
            return None, armed
        return "threshold", armed

    def maybe_summarize(self) -> SummaryRecord | None:
        reason, self.armed = self._due(self._ratio())
        if reason is None:
            return None
        try:
            record = self._summarize(reason)
        except SummaryNotSmaller as exc:
            # Counted as a summary that fired (hysteresis, cooldown): else every message would ask for it again.
            self.armed, self.since_summary = False, 0
            self._emit(EngineEvent("declined", exc.record, reason, exc.before, exc.after))
            return None
        # One more pass when the summary did not get usage under the trigger and there is still something to take.
        # The rules write it: document 004 allows one summarization model call per trigger, and the first pass may
        # have spent the model's whole time limit.
        if (self._ratio() >= self.setup.policy.trigger_ratio
                and self.candidates(self._target_keep())):
            try:
                record = self._summarize("second pass", summarizer=RuleSummarizer())
            except SummaryNotSmaller:
                log.info("a second pass would have saved nothing: not kept")
        return record

    # ----- how much -------------------------------------------------------------------------------------------

    def candidates(self, keep: int, up_to: str | None = None, at_request: bool = False) -> list[Message]:
        """Unprotected visible messages to summarize, leaving `keep` recent ones, never splitting a tool pair; with
        `at_request` (Summarize now), leaving the request that began the exchange the cut falls in, if it is near
        (exchange_start). Not for automatic summaries: on the Claude Code session at 32k they lost a command of 89
        (and 9 keeping up to a fifth of the budget more: benchmarks/fidelity)."""
        conversation = [m for m in self.archive.visible() if not self.archive.is_opening(m)]
        if up_to is not None:
            if up_to not in self.archive.position:
                raise KeyError(f"no message {up_to} in this conversation")
            cut = next((n + 1 for n, m in enumerate(conversation) if m.id == up_to), 0)
        else:
            cut = max(len(conversation) - keep, 0)
            if at_request:
                room = int(self.setup.budget.available * EXCHANGE_SHARE / self.setup.counter.factor)
                cut = exchange_start(conversation, cut, self.setup.counter.raw_message_tokens, room)
        # Move the cut earlier while it would separate a tool call from its result: to the earliest call whose
        # result is past the cut, taking in the results that brings along. A result's call is the nearest one before
        # it with its id (ids repeat in some chats: "call_0"). Linear: it was a pass over the head per step back.
        call_at = call_positions(conversation)
        earliest = min((call_at[n] for n in range(cut, len(conversation)) if n in call_at), default=cut)
        while earliest < cut:
            cut -= 1
            earliest = min(earliest, call_at.get(cut, cut))
        return [m for m in conversation[:cut] if not m.pinned]

    def chain_room(self, leaving: int = 0, talk: bool | None = None) -> int:
        """Tokens the summaries may still take together, if the oldest `leaving` summaries of the chain were folded
        away: the chain's share of the budget (at most max_summary_tokens but for conversation digests), and never
        more than half the room that the system prompt and pinned messages leave under the trigger (else in a small
        window the chain itself keeps the prompt overflowing).
        Where the summaries are conversation digests (`talk`, by default is_talk()), the conversation's share, of
        that room too when it is more than half (its tail is short messages, not tool outputs that must fit whole)."""
        fixed = self.meter.fixed_raw()
        available = self.setup.budget.available
        policy = self.setup.policy
        talk = self.is_talk() if talk is None else talk
        chain_share = policy.conversation_chain_share if talk else policy.chain_share
        of_room = max(0.5, chain_share / policy.trigger_ratio) if talk else 0.5
        share = int(min(available * chain_share, (available * policy.trigger_ratio - fixed) * of_room))
        # A chain of tool-traffic summaries (a trail rebuilt whole at each merge) keeps to one summary's cap too, and
        # the room goes to recent work: at 32k, 40 held-out SWE-bench sessions keep 95% of their facts (98% before)
        # in summaries of 3,200 tokens (median; 4,500 before, up to 7,100) (benchmarks/fidelity).
        if not talk:
            share = min(share, policy.max_summary_tokens)
        tokens = self.setup.counter.raw_message_tokens
        return share - sum(tokens(self.archive.summary_message(r)) for r in self.archive.chain[leaving:])

    def is_talk(self, candidates: list[Message] | None = None) -> bool:
        """Whether the summaries are conversation digests, which may take the conversation's share: every summary in
        the chain is one, and so is the one about to be made of `candidates`; before the first summary, whether the
        messages in the window are conversation. A chain holding a summary of tool traffic keeps to chain_share
        whatever its newest summary is (with the newest deciding, a digest after tool summaries let the chain hold
        0.46-0.58 of the budget for 2-12 summaries where its share is 0.30). A marker (no room for a summary) is
        neither: one left after digests, for lack of room beside a long tail of tool outputs, made the digests' chain
        keep to chain_share all at once, which it held twice over until the next summary."""
        if candidates is not None and not is_conversation(candidates):
            return False
        chain = [r for r in self.archive.chain if not is_marker(r.text)]
        return all(is_digest(r.text) for r in chain) if chain else is_conversation(self.archive.visible())

    def summary_cap(self, talk: bool | None = None, header: int = 0) -> int:
        """A summary's cap grows with the room the chain has left (less `header`, what the summary's message adds
        around its text), up to max_summary_tokens."""
        return max(min(self.setup.policy.max_summary_tokens, self.chain_room(talk=talk) - header), 0)

    def _target_keep(self) -> int:
        """The most recent messages that can stay verbatim while the summary of the rest brings usage down to the
        target fill: keep_recent or more, fewer (down to min_recent) only when the tail alone is above the target."""
        policy = self.setup.policy
        conversation = [m for m in self.archive.visible() if m.role != "system"]
        target = policy.target_ratio * self.setup.budget.available
        tokens = self.setup.counter.raw_message_tokens
        total = self.meter.raw_total() - self.assembler.beyond_any_room()
        cap = self.summary_cap()

        def left(keep: int) -> int:
            """The prompt without the candidates (every candidate is visible: an item of the prompt)."""
            return total - sum(map(tokens, self.candidates(keep)))

        def reaches_target(keep: int) -> bool:
            rest = left(keep)
            return self.setup.counter.calibrated(rest + min(cap, int((total - rest) * EXPECTED_SUMMARY_SHARE))) <= target

        low, high = policy.keep_recent, max(len(conversation) - 1, policy.keep_recent)
        if not reaches_target(low):
            if self.setup.counter.calibrated(left(low)) <= target:
                # The summary expected of a long stretch, not the tail, stays above the target: fewer recent messages
                # would not bring it down (opening a long conversation kept 2 of them).
                return low
            # The recent tail alone is above the target (large tool outputs in a small window): shrink it toward
            # min_recent, or the next message overflows again and the chain grows two messages at a time.
            low, high = policy.min_recent, policy.keep_recent
            if not reaches_target(low):
                return low
        while low < high:  # the largest keep that still reaches the target (fewer kept only lowers usage)
            middle = (low + high + 1) // 2
            if reaches_target(middle):
                low = middle
            else:
                high = middle - 1
        return low

    def _tail_keep(self) -> int:
        """Keep the recent tail verbatim, shrinking it toward min_recent while the result would not fit."""
        policy = self.setup.policy
        keep = policy.keep_recent
        cap = self.summary_cap()
        tokens = self.setup.counter.raw_message_tokens
        # The prompt without recall, less the candidates outside its system items (later system messages, such
        # as session dates, are candidates too).
        total = self.meter.raw_total() - self.assembler.beyond_any_room()
        # The candidates of each keep are a prefix of those of min_recent: their tokens summed once, not at each keep
        # (a quarter of `precis context` on a chat of 41,700 messages).
        taken = self.candidates(policy.min_recent, at_request=True) if keep > policy.min_recent else []
        taken_tokens = list(accumulate((tokens(m) if m.role != "system" else 0 for m in taken), initial=0))
        while keep > policy.min_recent:
            after = total + cap - taken_tokens[len(self.candidates(keep, at_request=True))]
            if self.setup.counter.calibrated(after) <= self.setup.budget.available:
                break
            keep -= 1
        return keep

    def can_summarize(self) -> bool:
        """Whether summarize_now() has anything to take (unpinned messages older than the tail it keeps)."""
        return bool(self.candidates(self._tail_keep(), at_request=True))

    # ----- making, folding and undoing records ----------------------------------------------------------------

    def summarize_now(self, instructions: str | None = None, up_to: str | None = None) -> SummaryRecord:
        """Manual summary; instructions are added to (not replacing) the default prompt."""
        return self._summarize("manual", instructions=instructions, up_to=up_to)

    def _summarize(self, reason: str, instructions: str | None = None, up_to: str | None = None,
                   summarizer: Summarizer | None = None) -> SummaryRecord:
        """A summary record of the candidates, written by `summarizer` (by default the chat's)."""
        setup, chain = self.setup, self.archive.chain
        summarizer = summarizer or setup.summarizer
        policy, counter = setup.policy, setup.counter
        started = time.perf_counter()
        if up_to is not None:
            keep = policy.keep_recent
        else:
            keep = self._tail_keep() if reason == "manual" else self._target_keep()
        candidates = self.candidates(keep, up_to, at_request=reason == "manual")
        if not candidates:
            raise NothingToSummarize("nothing to summarize: only protected or recent messages are in the window")
        before = self.meter.usage(recall=False)
        # The summary's message adds its header line around its text; a merge of digests leaves the room the digest
        # of these candidates will take, with that line.
        talk, coming = self.is_talk(candidates), 0
        wrapper = MESSAGE_OVERHEAD + counter.count_text(summary_message(
            SummaryRecord(depth=len(chain) + 1, mode=summarizer.mode, text=""), len(candidates)).content)
        if talk:
            coming = digest_room(candidates, counter.text_tokens) + wrapper
        if len(chain) >= policy.max_depth:
            self._merge_oldest(len(chain) - policy.max_depth + 2, "merge at maximum depth", coming)
        elif chain and self.summary_cap(talk) < (MIN_SUMMARY_ROOM * 4 if len(chain) > 1 else MIN_SUMMARY_ROOM):
            # The chain has used its share: fold it into one summary rather than summarizing a couple of messages
            # at a time, or than an empty marker for them where one summary took all of it (the first may: its cap
            # is all the room there is).
            self._merge_oldest(len(chain), "merge: the summaries used their share", coming)
        elif len(chain) > 1 and before.floor_ratio >= policy.trigger_ratio:
            self._merge_oldest(len(chain), "merge: what no summary removes is above the trigger", coming)
        chain = self.archive.chain  # a merge rebuilds it
        extra = "\n".join(p for p in (policy.extra_instructions, instructions or "") if p) or None
        cap = self.summary_cap(talk, wrapper)
        if talk:
            # The digest fits beside what stays: in a small window the conversation's share and the kept tail
            # together may not (at 1,024 tokens a manual summary left the prompt over the budget).
            staying = self.meter.raw_total() - sum(map(counter.raw_message_tokens, candidates))
            cap = min(cap, int(setup.budget.available / counter.factor) - staying - wrapper)
        marker = cap < MIN_SUMMARY_ROOM
        if marker:
            draft = SummaryDraft(text=no_room_marker(len(candidates)),
                                 key_points=[], facets=Facets(), mode=summarizer.mode)
        else:
            session = self.archive.marker_before(candidates[0].id)
            draft = summarizer.summarize(SummaryRequest(
                messages=candidates, max_tokens=cap, counter=counter, instructions=extra,
                preserve_error_details=policy.preserve_error_details, abort_on_failure=policy.abort_on_failure,
                date=session_date(session.content) if session else "", depth=len(chain) + 1))
        # Secrets found in the originals: the summarizer may already have dropped them, the count still tells; and
        # their values are hidden wherever the summary repeats them without the label that gave them away.
        in_originals, known = secrets_in([(m.content, [c.arguments for c in m.tool_calls]) for m in candidates])
        text, n_text = redact(draft.text, known)
        key_points, n_points = redact_obj(draft.key_points, known)
        facets_dump, n_facets = redact_obj(draft.facets.model_dump(), known)
        parent = chain[-1].id if chain else None
        record = SummaryRecord(
            depth=len(chain) + 1, parent_id=parent, mode=draft.mode,
            # The marker stays whole (a dozen tokens): cut to a room under 50 it would say nothing ("[").
            text=text if marker else fit_text(text, cap, counter), key_points=key_points,
            facets=Facets.model_validate(facets_dump),
            covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in candidates],
            first_message_id=candidates[0].id, last_message_id=candidates[-1].id,
            summarizer_tokens=draft.summarizer_tokens, written_by=draft.written_by, tokens_before=before.total,
            trigger=reason,
            usage_ratio=round(before.ratio, 4), instructions=instructions, fallback_used=draft.fallback_used,
            fallback_reason=draft.fallback_reason, redactions=max(in_originals, n_text + n_points + n_facets))
        record.tokens = counter.count_text(record.text)
        ahead = self.meter.usage(recall=False).total  # after any merge above: what this summary itself must lower
        self.archive.add(record)
        after = self.meter.usage(recall=False)
        if after.total >= ahead:
            self.archive.discard(record)
            raise SummaryNotSmaller(record, len(candidates), ahead, after.total)
        record.tokens_after = after.total
        record.duration_ms = round((time.perf_counter() - started) * 1000, 2)
        self.check_coverage(record)
        self.armed = after.ratio < policy.reset_ratio
        self.since_summary = 0
        # Document 004's debug-log fields: depth, messages compressed, usage before, tokens after.
        log.info("summarized %d messages (%s) at depth %d: usage %.2f of the budget, %d -> %d tokens, mode %s%s",
                 len(candidates), reason, record.depth, record.usage_ratio, record.tokens_before, record.tokens_after,
                 record.mode, " (fallback: rules)" if record.fallback_used else "")
        self._emit(EngineEvent("summarized", record, reason, record.tokens_before, record.tokens_after))
        return record

    def _facts_of(self, record: SummaryRecord) -> TrailFacts:
        """Facts of the originals a record replaced; a merge reuses its children's, so no message is re-read."""
        archive = self.archive

        def combine(current: SummaryRecord, children: list[TrailFacts]) -> TrailFacts:
            own = collect_facts(archive.messages_by_ids(current.covered_ids))
            return union_facts([*children, own]) if children else own

        return through_folds(record, archive.by_record, self._facts, combine)

    def check_coverage(self, record: SummaryRecord) -> None:
        """Which facts of the originals a record replaced are still visible to the model (secrets redacted)."""
        coverage = check_facts(self._facts_of(record), self.meter.context_text())
        record.trail_coverage = TrailCoverage.model_validate(redact_obj(coverage.model_dump())[0])

    def _merge_oldest(self, count: int, reason: str, coming: int = 0) -> SummaryRecord:
        """Fold the oldest summaries into one instead of refusing (at the maximum depth, or when the chain has used
        its share): the chat never stops."""
        started = time.perf_counter()
        before = self.meter.usage(recall=False)
        children = self.archive.chain[:count]
        facets = merge_facets([c.facets for c in children])
        key_points = list(dict.fromkeys(p for c in children for p in c.key_points))[-30:]
        # It follows what the oldest of them followed, never a newer summary.
        record = SummaryRecord(
            depth=1, parent_id=children[0].parent_id, mode=children[-1].mode,
            first_message_id=children[0].first_message_id, last_message_id=children[-1].last_message_id,
            text=self._merged_text(children, facets, key_points, coming), key_points=key_points, facets=facets,
            merged_ids=[c.id for c in children], written_by=RULES, tokens_before=before.total, trigger=reason,
            usage_ratio=round(before.ratio, 4), redactions=sum(c.redactions for c in children))
        record.tokens = self.setup.counter.count_text(record.text)
        folded = {c.id for c in children}
        for child in children:
            child.status = "merged"
        for later in self.archive.chain[count:]:
            if later.parent_id in folded:
                later.parent_id = record.id
        self.archive.add(record)
        self.check_coverage(record)
        after = self.meter.usage(recall=False)
        record.tokens_after = after.total
        record.duration_ms = round((time.perf_counter() - started) * 1000, 2)
        # The merged record now heads the chain: every depth and header changes.
        self.archive.renumber(new_texts=True)
        self._emit(EngineEvent("merged", record, record.trigger, before.total, after.total))
        return record

    def _merged_text(self, children: list[SummaryRecord], facets: Facets, key_points: list[str],
                     coming: int = 0) -> str:
        """One text for merged summaries, rebuilt from their facts rather than cut from the end of their texts:
        the artifact trail and the user's requests first, then the newest key points in the room left (conversation
        digests re-rank the sentences of all of them). It takes the room the chain has without them, less a
        little (next_room) for the next summary: that one lives only until the next merge folds
        its facts in, while the merge is all that remains of the early work (leaving a quarter, the Claude Code
        session at 8k, counted with SmolLM2's vocabulary, kept 65% of its commands; now 89%: benchmarks/fidelity)."""
        policy, count = self.setup.policy, self.setup.counter.count_text
        room = self.chain_room(len(children))
        cap = max(min(policy.max_summary_tokens, room - next_room(room)), MIN_SUMMARY_ROOM)
        covered = sum(map(self.archive.covered_count, children))
        worded = [c for c in children if not is_marker(c.text)]
        if worded and all(is_digest(c.text) for c in worded):
            # Digests know the room the next one takes (`coming`, its share of the messages it is about to
            # replace): the merge takes the rest (with a quarter left, the chains of LoCoMo's longer conversations
            # at 8k ended a tenth below their share: benchmarks/fidelity). Never larger than the digests it folds:
            # each took at most its share of what it replaced.
            if coming:
                cap = min(policy.max_summary_tokens, max(self.chain_room(len(children)) - coming, MIN_SUMMARY_ROOM))
            cap = min(cap, max(sum(c.tokens for c in worded), MIN_SUMMARY_ROOM))
            return merged_digest([c.text for c in worded], covered, cap, count)
        header = f"Merged summary of {counted(covered, 'earlier message')}."
        # The trail first (it is what the originals' readers miss most), the newest key points in what it leaves.
        trail = render_artifact_trail(facets, cap - count(header) - 8, count)
        room = cap - count(header) - count(trail) - 8
        kept: list[str] = []
        for point in reversed(key_points):  # the newest points matter most for what comes next
            line = f"- {point}"
            if count(line) + 1 > room:
                break
            kept.insert(0, line)
            room -= count(line) + 1
        # A summary known only by its text (Claude Code's own compaction, imported) has no points or facts to
        # rebuild from: its text, cut to the room left, or the merge kept one line of its 4,000 tokens.
        told = "\n".join(c.text for c in children if not c.key_points and c.facets == Facets())
        told = fit_text(told, room - 1, self.setup.counter) if told and room > MIN_SUMMARY_ROOM else ""
        body = "\n".join(p for p in (header, told, "Key points:\n" + "\n".join(kept) if kept else "", trail) if p)
        return fit_text(body, max(cap, 1), self.setup.counter)

    def undo_last(self) -> SummaryRecord:
        """Undo the latest summarization (or merge): its originals come back exactly, the chain returns to its parent."""
        archive = self.archive
        active = [r for r in archive.records if r.status == "active"]
        if not active:
            raise NothingToUndo("there is no summary to undo")
        record = active[-1]
        before = self.meter.usage(recall=False)
        for covered in record.covered:
            position = archive.position.get(covered.id)
            original = None if position is None else archive.messages[position]
            if original is None or original.sha256() != covered.sha256:
                raise IntegrityError(f"archived message {covered.id} does not match its fingerprint; undo refused")
        record.status = "undone"
        children = [archive.by_record[c] for c in record.merged_ids if c in archive.by_record]
        for child in children:
            child.status = "active"
        for later in archive.records:  # what followed the merge follows its newest child again
            if children and later.parent_id == record.id:
                later.parent_id = children[-1].id
        if children:
            archive.rebuild()
        else:
            archive.release(record)
        archive.renumber()
        after = self.meter.usage(recall=False)
        self.armed = after.ratio < self.setup.policy.reset_ratio
        self._emit(EngineEvent("undone", record, "undo", before.total, after.total))
        return record

    # ----- events -------------------------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[EngineEvent], None]) -> Callable[[], None]:
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def _emit(self, event: EngineEvent) -> None:
        """Tell every listener; the first error one raised is raised after all were told. Never swallowed: a
        listener saves the summary (attach_engine), and a save that failed in silence left `precis summarize`
        saying "4 messages → 1 summary" with nothing saved."""
        failed: Exception | None = None
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as exc:  # the others are still told
                failed = failed or exc
        if failed is not None:
            raise failed

