"""Prebuilt scorers. Message-extraction helpers live in `scorewatch.scorers.utils`; the scorers
by short name (for the CLI and the server configuration) in `scorewatch.scorers.registry`.

LLM-judged factories take the judge model first (`create_faithfulness_scorer(model, ...)`);
model-free ones take keyword options only; `checks` holds the quick 1/0 checks
(`checks.includes("sunny")`, `checks.called_tool("get_weather")`, ...).
"""

from __future__ import annotations

from . import checks
from .answer_relevancy import create_answer_relevancy_scorer
from .answer_similarity import create_answer_similarity_scorer
from .bias import create_bias_scorer
from .completeness import create_completeness_scorer
from .content_similarity import create_content_similarity_scorer
from .context_precision import create_context_precision_scorer
from .context_recall import create_context_recall_scorer
from .context_relevance import create_context_relevance_scorer
from .faithfulness import create_faithfulness_scorer
from .hallucination import create_hallucination_scorer
from .keyword_coverage import create_keyword_coverage_scorer
from .multi_turn_judge import create_multi_turn_judge_scorer
from .noise_sensitivity import create_noise_sensitivity_scorer
from .prompt_alignment import create_prompt_alignment_scorer
from .rubric import create_rubric_scorer
from .rubric_label import create_rubric_label_scorer
from .summarization import create_summarization_scorer
from .textual_difference import create_textual_difference_scorer
from .tone_consistency import create_tone_consistency_scorer
from .tool_call_accuracy_code import create_tool_call_accuracy_code_scorer
from .tool_call_accuracy_llm import create_tool_call_accuracy_llm_scorer
from .toxicity import create_toxicity_scorer
from .trajectory_accuracy_code import create_trajectory_accuracy_code_scorer
from .trajectory_accuracy_llm import create_trajectory_accuracy_llm_scorer
from .trajectory_code import create_trajectory_code_scorer

__all__ = [
    "checks",
    "create_answer_relevancy_scorer",
    "create_answer_similarity_scorer",
    "create_bias_scorer",
    "create_completeness_scorer",
    "create_content_similarity_scorer",
    "create_context_precision_scorer",
    "create_context_recall_scorer",
    "create_context_relevance_scorer",
    "create_faithfulness_scorer",
    "create_hallucination_scorer",
    "create_keyword_coverage_scorer",
    "create_multi_turn_judge_scorer",
    "create_noise_sensitivity_scorer",
    "create_prompt_alignment_scorer",
    "create_rubric_label_scorer",
    "create_rubric_scorer",
    "create_summarization_scorer",
    "create_textual_difference_scorer",
    "create_tone_consistency_scorer",
    "create_tool_call_accuracy_code_scorer",
    "create_tool_call_accuracy_llm_scorer",
    "create_toxicity_scorer",
    "create_trajectory_accuracy_code_scorer",
    "create_trajectory_accuracy_llm_scorer",
    "create_trajectory_code_scorer",
]
