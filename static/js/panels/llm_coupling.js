// Written by bench/bench_real_model.py --summarise ... --guide (bench/RESULTS.md, issue 29); do not edit.
export const LLM_COUPLING = {
  "measured": "2026-12-06 14:32:41 UTC",
  "model": "SmolLM2-135M-Instruct",
  "command": "bench/bench_real_model.py --summarise bench/out/real_model.json bench/out/real_model_attr.json --guide",
  "rows": [
    {
      "task": "secret word",
      "removed": "keeper-says",
      "outcome": "exact_match",
      "traces": 1,
      "pairs": 128,
      "rho_pooled_within": null,
      "saving_within": 1.0,
      "control_mean": 0.296875,
      "treated_mean": 0.0
    },
    {
      "task": "secret word",
      "removed": "keeper-says",
      "outcome": "token_f1",
      "traces": 1,
      "pairs": 128,
      "rho_pooled_within": 0.4495047746341961,
      "saving_within": 1.7899439753179562,
      "control_mean": 0.7403007582695083,
      "treated_mean": 0.6657887468434343
    },
    {
      "task": "secret word",
      "removed": "chatter-says",
      "outcome": "exact_match",
      "traces": 1,
      "pairs": 128,
      "rho_pooled_within": 0.6788335930269978,
      "saving_within": 3.10989010989011,
      "control_mean": 0.25,
      "treated_mean": 0.2265625
    },
    {
      "task": "secret word",
      "removed": "chatter-says",
      "outcome": "token_f1",
      "traces": 1,
      "pairs": 128,
      "rho_pooled_within": 0.5265569972369066,
      "saving_within": 2.0810112971085712,
      "control_mean": 0.7496258707081317,
      "treated_mean": 0.6807247605845952
    },
    {
      "task": "Who&When",
      "removed": "one message per log",
      "outcome": "exact_match",
      "traces": 44,
      "pairs": 352,
      "varying_traces": 0,
      "rho_pooled_within": null,
      "saving_within": null,
      "control_mean": 0.0,
      "treated_mean": 0.0
    },
    {
      "task": "Who&When",
      "removed": "one message per log",
      "outcome": "token_f1",
      "traces": 44,
      "pairs": 352,
      "varying_traces": 2,
      "rho_pooled_within": -0.1366263160718452,
      "saving_within": 0.8869133152816772,
      "control_mean": 0.001202202733281344,
      "treated_mean": 0.0017870815926817345
    },
    {
      "task": "Who&When",
      "removed": "one message per log",
      "outcome": "verifier",
      "traces": 44,
      "pairs": 352,
      "varying_traces": 18,
      "rho_pooled_within": 0.12580715961245953,
      "saving_within": 1.1428571428571428,
      "control_mean": 0.3721590909090909,
      "treated_mean": 0.3494318181818182
    }
  ]
};
