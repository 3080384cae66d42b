"""The "New run" form: the project the run goes to, and the recipe's RunConfig fields a researcher
sets, with its defaults."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from webapp.accounts.models import Project

#: The orchestrator policies the form names (RunConfig.policy); a recipe offers those in its POLICY_DEFAULTS.
POLICIES = {
    "mlp": "Small network on trace features (MLP)",
    "llm": "Language model with a LoRA adapter (SmolLM2-135M-Instruct)",
}
ALGORITHMS = [("ppo", "PPO (clipped, value baseline)"), ("grpo", "GRPO (group baseline)")]
CREDITS = [
    ("shared", "Shared terminal reward"),
    ("counterfactual", "Paired counterfactual per decision"),
    ("shapley", "Shapley over decisions"),
    ("expected", "Expected outcome (SwarmSim's exact E[R] in place of the 0/1 outcome)"),
    ("counterfactual_baseline", "Counterfactual per block in place of the outcome (re-rollouts)"),
    ("counterfactual_baseline_exact", "Counterfactual per block in place of the outcome, on SwarmSim's exact E[R]"),
]
STOPS = [
    ("learned", "Learned, offered after the answer (cannot stop before answering)"),
    ("anytime", "Learned, offered at every decision (anytime)"),
    ("rule", "Rule-based"),
    ("none", "None (run to the step limit)"),
]
#: Where policy llm plays its episodes (RunConfig.llm_rollouts).
LLM_ROLLOUTS = [
    ("local", "On the training worker (torch)"),
    ("server", "On the vLLM server (make run ARGS=--llm), the adapter reloaded every iteration"),
]
#: The environment policy llm orchestrates (RunConfig.llm_env).
LLM_ENVS = [
    ("swarmsim", "SwarmSim (drawn outcomes, exact counterfactuals)"),
    ("llm_workers", "SwarmSim with LLM workers (the vLLM server's model solves each subtask)"),
]
#: SwarmSim's grading of an answer (RunConfig.answer_credit, trainer.sim.env).
ANSWER_CREDITS = [
    ("all_or_nothing", "All or nothing"),
    ("partial", "Partial (a stop before the answer earns part)"),
]
#: Policy llm's model (RunConfig.llm_model): "" is the default, as the recipe builds it on the worker.
DEFAULT_LLM_MODEL = ("", "SmolLM2-135M-Instruct (var/llm/smollm2 on the training worker)")
#: The RunConfig fields of policy llm alone: shown for it only (static/js/pages/run_new.js) and set
#: only for it (another policy keeps the recipe's values).
LLM_FIELDS = ("llm_env", "llm_model", "lora_rank", "group_size", "episodes_per_iteration")
#: The RunConfig choice fields the form sets as they are.
CHOICE_FIELDS = ("policy", "llm_rollouts", "level", "algorithm", "credit", "stop", "answer_credit")
#: Reward weight fields of the form -> keys of RunConfig.reward_weights.
WEIGHTS = {
    "w_success": "success",
    "w_parallelism": "parallelism",
    "w_finish": "finish",
    "w_critical_steps": "critical_steps",
}


def _llm_count_field(label: str, lowest: int, highest: int, help_text: str, min_reason: str = "") -> forms.IntegerField:
    """An optional whole-number field of policy llm, in [lowest, highest], whose errors name it."""
    name = label if label.startswith("LoRA") else label[0].lower() + label[1:]
    return forms.IntegerField(
        required=False,
        min_value=lowest,
        max_value=highest,
        label=label,
        help_text=f"policy llm only: {help_text}",
        error_messages={
            "min_value": f"{name}: must be at least %(limit_value)s{min_reason}",
            "max_value": f"{name}: must be at most %(limit_value)s",
            "invalid": f"{name}: must be a whole number",
        },
    )


class NewRunForm(forms.Form):
    project = forms.ModelChoiceField(
        queryset=Project.objects.none(),
        empty_label=None,
        help_text="the run, its checkpoints and its sample episodes belong to this project",
        error_messages={
            "invalid_choice": "you cannot start runs in that project: it needs the reviewer or admin role there",
            "required": "choose the project the run goes into",
        },
    )
    name = forms.CharField(required=False, max_length=300, help_text="optional; a name is made from the config")
    policy = forms.ChoiceField(
        choices=[],
        required=False,
        label="Orchestrator policy",
        help_text="mlp: a small network on features of the trace so far. llm: a language model chooses every "
        "spawn, delegation, message, aggregate and stop as text, constrained to the legal actions "
        "(SmolLM2-135M-Instruct with a LoRA adapter on the worker, built by python trainer/llm_server.py install "
        "build-model); "
        "it trains with GRPO on episodes of at most 12 decisions, and each decision is a forward pass of the model: "
        "seconds each on a CPU (the estimate below the fields says how long an iteration takes), so keep the budget "
        "to hundreds of steps",
    )
    llm_rollouts = forms.ChoiceField(
        choices=LLM_ROLLOUTS,
        required=False,
        label="Policy llm plays on",
        help_text="policy llm only. server: the vLLM server the workers are pointed at (SWARMSCOPE_OPENAI_BASE_URL, "
        "started by make run ARGS=--llm) samples every action, constrained to the legal ones, with the run's LoRA "
        "adapter loaded there before each iteration; the update stays on the training worker",
    )
    llm_env = forms.ChoiceField(
        choices=LLM_ENVS,
        required=False,
        label="Environment",
        help_text="policy llm only. llm_workers: every subtask a worker is delegated is a step of an arithmetic chain "
        "(a sum that adds its inputs' results) that the vLLM server's model answers, graded by exact match, so a wrong "
        "answer propagates; needs the server (make run ARGS=--llm). SwarmSim's exact E[R] does not exist there: the "
        "expected and exact credits and the stop regret are not offered with it",
    )
    llm_model = forms.ChoiceField(
        choices=[DEFAULT_LLM_MODEL],
        required=False,
        label="Model",
        help_text="policy llm only: a local Hugging Face model folder on the training worker. The default is built by "
        "python trainer/llm_server.py install build-model (make run ARGS=--llm builds it); other folders are offered "
        "where an operator lists them in SWARMSCOPE_LLM_POLICY_MODELS",
        error_messages={
            "invalid_choice": "model: %(value)s is not a model folder this server offers (the default, or one listed "
            "in SWARMSCOPE_LLM_POLICY_MODELS)"
        },
    )
    lora_rank = _llm_count_field(
        "LoRA rank",
        1,
        1024,
        "the adapter's rank r (alpha = 2r) on the attention projections of the top layers; at most 16 where it plays "
        "on the vLLM server (the server's --max-lora-rank)",
    )
    group_size = _llm_count_field(
        "Group size",
        2,
        256,
        "episodes of one task in a group; GRPO scores each episode against its group's mean reward, so a group needs "
        "at least 2, and the group size must divide the episodes per iteration",
        min_reason=" (GRPO's advantage is relative to the group)",
    )
    episodes_per_iteration = _llm_count_field(
        "Episodes per iteration",
        1,
        4096,
        "episodes played before each update (a multiple of the group size); every decision of each is a forward pass "
        "of the model",
    )
    level = forms.ChoiceField(choices=[], help_text="a SwarmSim level (long: at least 200 decisions per episode)")
    algorithm = forms.ChoiceField(choices=ALGORITHMS)
    credit = forms.ChoiceField(choices=CREDITS, label="Credit scheme")
    stop = forms.ChoiceField(
        choices=STOPS,
        label="Stop decision",
        help_text="learned (the default) cannot learn when to stop: stop is offered only once the policy has "
        "answered, when E[R] is already fixed, so stopping right after the answer is always best and the default "
        "learns at most what rule does by construction; it can never stop before answering (give up on a hopeless "
        "task, or submit partial work). anytime: stop offered at every decision, a real decision with premature "
        "stops possible; pair it with partial credit (under all or nothing a stop before the answer scores 0, and "
        "a stop offered before the answer has taught runs to stop without answering); in bench_stop it still lost "
        "0.20 of task reward to rule at 20,000 steps (bench/RESULTS.md). rule: stop right after the answer; none: run "
        "to the step limit. The run page's stop regret is over the stops the mode offered",
    )
    answer_credit = forms.ChoiceField(
        choices=ANSWER_CREDITS,
        required=False,
        label="Answer credit",
        help_text="all or nothing: only a full, correct answer scores; partial: a stop before the answer earns half "
        "the share of correct subtasks, and an answer adds half the all-or-nothing score (left out: the recipe's)",
    )
    w_success = forms.FloatField(label="Success weight")
    w_parallelism = forms.FloatField(label="Parallelism weight", help_text="annealed orchestration term (Kimi PARL)")
    w_finish = forms.FloatField(label="Finish weight", help_text="annealed orchestration term (Kimi PARL)")
    w_critical_steps = forms.FloatField(label="Critical-steps cost", help_text="per critical step")
    budget_steps = forms.IntegerField(
        min_value=1,
        label="Budget (environment steps)",
        help_text="all of them, credit re-rollouts included; the run stops at the first iteration boundary past it",
    )
    seed = forms.IntegerField(min_value=0)

    def __init__(
        self,
        *args,
        defaults: dict[str, Any],
        levels: list[str],
        projects: list[Project],
        project: Project | None = None,
        policy_defaults: dict[str, dict[str, Any]] | None = None,
        **kwargs,
    ):
        """`projects`: those the user may start runs in (reviewer or admin), the only valid choices
        (with just one, a form that leaves `project` out means that one); `project`: the one
        preselected (default: the first); `policy_defaults`: per policy other than the default, the
        config fields the form does not set that the policy changes (the recipe's POLICY_DEFAULTS)."""
        self.defaults = defaults
        self.policy_defaults = policy_defaults or {}
        weights = defaults.get("reward_weights") or {}
        initial = {k: defaults.get(k) for k in (*CHOICE_FIELDS, *LLM_FIELDS, "budget_steps", "seed")}
        initial.update({field: weights.get(key, 0.0) for field, key in WEIGHTS.items()})
        chosen = project or (projects[0] if projects else None)
        initial["project"] = chosen.pk if chosen else None
        super().__init__(*args, initial=initial, **kwargs)
        self.fields["project"].queryset = Project.objects.filter(pk__in=[p.pk for p in projects]).order_by("name")
        self.fields["project"].required = len(projects) != 1
        self.projects = projects
        self.fields["level"].choices = [(level, level) for level in levels]
        if "policy" in defaults:
            offered = [defaults["policy"], *(p for p in self.policy_defaults if p != defaults["policy"])]
            self.fields["policy"].choices = [(p, POLICIES.get(p, p)) for p in offered]
        else:  # a recipe with one policy
            del self.fields["policy"]
        if "llm_rollouts" not in defaults:
            del self.fields["llm_rollouts"]
        for name in LLM_FIELDS:
            if name not in defaults or "llm" not in self.policy_defaults:
                del self.fields[name]
        if "llm_model" in self.fields:
            offered = [(p, p) for p in settings.SWARMSCOPE_LLM_POLICY_MODELS]
            self.fields["llm_model"].choices = [DEFAULT_LLM_MODEL, *offered]
        #: The fields shown for one policy only (templates/runs/run_new.html marks them `data-policy`).
        self.policy_fields = {name: "llm" for name in ("llm_rollouts", *LLM_FIELDS) if name in self.fields}

    def clean_project(self) -> Project:
        return self.cleaned_data.get("project") or self.projects[0]

    def config(self) -> dict[str, Any]:
        """The RunConfig dict of the cleaned form: the recipe's defaults with the form's values."""
        data = self.cleaned_data
        weights = dict(self.defaults.get("reward_weights") or {})
        weights.update({key: data[field] for field, key in WEIGHTS.items()})
        config = dict(self.defaults)
        config.update(self.policy_defaults.get(data.get("policy", ""), {}))
        own = LLM_FIELDS if data.get("policy") == "llm" else ()
        names = (*CHOICE_FIELDS, *own, "budget_steps", "seed")
        config.update({k: data[k] for k in names if data.get(k) not in (None, "")})
        config["reward_weights"] = weights
        return config

    def add_config_error(self, field: str, message: str) -> None:
        """Show the recipe's validation error next to the form field it names (`config.level`,
        `config.reward_weights`, ...), else above the form."""
        name = field.split(".", 1)[1] if field.startswith("config.") else ""
        if name.startswith("reward_weights."):
            name = next((f for f, k in WEIGHTS.items() if name == f"reward_weights.{k}"), "")
        self.add_error(name if name in self.fields else None, message if name in self.fields else f"{field}: {message}")
