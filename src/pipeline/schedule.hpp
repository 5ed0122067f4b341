#pragma once
// Pipeline schedules as data: for one stage, the ordered list of compute and
// transfer actions of one optimizer step. The executor walks the list; the
// schedule checker (pipeline/schedule_check.hpp) proves a set of lists
// consistent and deadlock-free before anything runs. What follows the list
// (gradient reduction, clipping, the optimizer) is the trainer's, in plain
// sequence.
//
// Executor contract (what each action means):
//  * RecvActivation / RecvGrad POST a non-blocking receive for that micro-batch
//    (and chunk) from the previous / next stage. They come early, so the
//    transfer overlaps the compute before it.
//  * Forward / Backward first wait for their receive to complete (the first
//    stage's Forward and the last stage's Backward have none), then compute.
//  * SendActivation / SendGrad POST a non-blocking send of what the Forward /
//    Backward just produced. The executor waits on all sends at the end.
// The first stage has no RecvActivation / SendGrad, the last stage no
// SendActivation / RecvGrad. Per (peer, direction), sends and receives are in
// the same micro-batch order, so they match even with a single tag.
//
// Open for later schedules: `chunk` is the virtual-stage index of interleaved
// schedules (virtual stage chunk * stages + stage; always 0 today). A
// zero-bubble schedule would add BackwardInput / BackwardWeight kinds that
// split Backward: BackwardInput would take Backward's place in this contract
// (wait for RecvGrad, then SendGrad) and BackwardWeight would need neither.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wiola::pipeline {

enum class ActionKind : std::uint8_t {
  RecvActivation,
  Forward,
  SendActivation,
  RecvGrad,
  Backward,
  SendGrad,
};

enum class ScheduleKind : std::uint8_t {
  GPipe,     // all forwards, then all backwards: every micro-batch held at once
  OneFOneB,  // PipeDream-flush: warm-up forwards, one-forward-one-backward, cool-down
};

struct Action {
  ActionKind kind = ActionKind::Forward;
  int microbatch = 0;
  int chunk = 0;        // virtual-stage index (interleaving); 0 for now
  friend bool operator==(const Action&, const Action&) = default;
};

std::string_view schedule_kind_name(ScheduleKind k);   // "gpipe", "1f1b"
ScheduleKind parse_schedule_kind(std::string_view s);  // also "GPipe", "1F1B"; throws otherwise

// One stage's schedule of one optimizer step over `microbatches` micro-batches.
// Throws when stages < 1, stage is out of range or microbatches < 1.
std::vector<Action> make_schedule(ScheduleKind kind, int stages, int stage, int microbatches);
// Every stage's schedule, index = stage.
std::vector<std::vector<Action>> make_schedules(ScheduleKind kind, int stages, int microbatches);
// Forwards only (evaluation): per micro-batch receive, forward, send.
std::vector<Action> make_forward_schedule(int stages, int stage, int microbatches);

// Forwards a stage runs before its steady phase: GPipe m; 1F1B min(P - s - 1, m).
int warmup_forwards(ScheduleKind kind, int stages, int stage, int microbatches);
// Idle fraction of an ideal pipeline with equal stages: (P - 1) / (m + P - 1)
// for both GPipe and 1F1B (1F1B saves memory, not time).
double theoretical_bubble(ScheduleKind kind, int stages, int microbatches);
// A warning when the pipeline never fills (m < P) or the bubble exceeds 25%.
std::optional<std::string> bubble_warning(int stages, int microbatches);

// Compact text form for logs and tests: "RA3 F3 SA3 RG3 B3 SG3"; a non-zero
// chunk is appended as "F3@1".
std::string to_string(const Action& a);
std::string to_string(std::span<const Action> actions);  // space-separated
Action parse_action(std::string_view s);                 // throws on bad input
std::vector<Action> parse_actions(std::string_view s);   // whitespace-separated
// "stage 0: F0 SA0 ...\nstage 1: ..." for all stages.
std::string format_schedules(const std::vector<std::vector<Action>>& stages);

}  // namespace wiola::pipeline
