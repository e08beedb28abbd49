// Records how the reference reads judge answers written the way real models write them: for each
// case, the value a prompt step got (or the failure), and how many judge calls it spent.
// Usage: node tools/reference/record_judge_answers.mjs > tests/fixtures/reference/core/judge_answers.json
import { REF, scriptedModel, stable } from './mock_judge.mjs';

const { createScorer } = await import(`${REF}/@mastra/core/dist/evals/index.js`);
const { z } = await import(`${REF}/zod/index.js`);

// The second scripted answer is what a fallback call (if the reference makes one) would get.
const FALLBACK = '{"claims": ["from-fallback"]}';
const SCORE_FALLBACK = '{"score": 0.125}';

export const ANALYZE_CASES = {
  plain: '{"claims": ["a", "b"]}',
  prose_wrapped: 'Sure! Here it is: {"claims": ["a", "b"]} Hope that helps.',
  fence_after_prose: 'Here is the JSON you asked for:\n```json\n{"claims": ["a", "b"]}\n```',
  fence_only: '```json\n{"claims": ["a", "b"]}\n```',
  fence_without_language: '```\n{"claims": ["a", "b"]}\n```',
  trailing_text: '{"claims": ["a", "b"]}\nThese are all the claims.',
  trailing_comma: '{"claims": ["a", "b",],}',
  two_objects: '{"claims": ["a"]}{"claims": ["b"]}',
  two_objects_in_prose: 'First: {"claims": ["a"]} then: {"claims": ["b"]}',
  nan_member: '{"claims": ["a"], "note": NaN}',
  nan_before_claims: '{"note": NaN, "claims": ["a"]}',
  raw_newline_in_string: '{"claims": ["line one\nline two"]}',
  single_quotes: "{'claims': ['a']}",
  no_json: 'I cannot answer that.',
  truncated_literal: '{"claims": ["a"], "complete": tr',
  truncated_string: '{"claims": ["a", "b',
  truncated_in_prose: 'Here: {"claims": ["a", "b',
  stop_length_complete: { text: '{"claims": ["a"]}', finishReason: 'length' },
  stop_length_truncated: { text: '{"claims": ["a", "b', finishReason: 'length' },
  // Issue 30: numbers and types JSON does not have, and what surrounds the JSON.
  number_leading_zero: '{"claims": ["a"], "confidence": 07}',
  number_leading_point: '{"claims": ["a"], "confidence": .5}',
  number_plus_sign: '{"claims": ["a"], "confidence": +0.5}',
  number_trailing_point: '{"claims": ["a"], "confidence": 5.}',
  number_as_string: '{"claims": ["a"], "confidence": "0.7"}',
  boolean_as_string: '{"claims": ["a"], "complete": "true"}',
  number_exponent: '{"claims": ["a"], "confidence": 5e-1}',
  prose_then_escaped_braces: 'Claims: {"claims": ["a"]} where \\{x\\} is the set.',
  json_then_escaped_braces: '{"claims": ["a"]} where \\{x\\} is the set.',
  prose_then_bare_braces: 'Claims: {"claims": ["a"]} where {x} is the set.',
  curly_quoted_keys: '{\u201cclaims\u201d: [\u201ca\u201d]}',
  curly_quotes_around_json: '\u201c{"claims": ["a"]}\u201d',
  curly_quotes_in_value: '{"claims": ["the \u201cbest\u201d one"]}',
  byte_order_mark: '\ufeff{"claims": ["a"]}',
  byte_order_mark_fenced: '\ufeff```json\n{"claims": ["a"]}\n```',
};

export const SCORE_CASES = {
  int_score: '{"score": 1}',
  float_score: '{"score": 0.75}',
  prose_wrapped: 'My verdict: {"score": 0.75}. Thanks!',
  trailing_comma: '{"score": 0.75,}',
  nan_score: '{"score": NaN}',
  string_score: '{"score": "0.75"}',
  leading_zero_score: '{"score": 07}',
  leading_point_score: '{"score": .5}',
  plus_sign_score: '{"score": +0.5}',
  byte_order_mark_score: '\ufeff{"score": 0.5}',
  curly_quoted_score: '{\u201cscore\u201d: 0.5}',
  prose_then_escaped_braces_score: 'Score: {"score": 0.5} for \\{x\\}.',
};

function analyzeScorer(answer) {
  return createScorer({
    id: 'answers',
    description: 'd',
    judge: { model: scriptedModel([answer, FALLBACK]), instructions: 'Judge carefully.' },
  })
    .analyze({
      description: 'Extract claims',
      outputSchema: z.object({
        claims: z.array(z.string()),
        note: z.string().optional(),
        complete: z.boolean().optional(),
        confidence: z.number().optional(),
      }),
      createPrompt: () => 'List the claims.',
    })
    .generateScore(() => 1);
}

function scoreScorer(answer) {
  return createScorer({
    id: 'answers',
    description: 'd',
    judge: { model: scriptedModel([answer, SCORE_FALLBACK]), instructions: 'Judge carefully.' },
  }).generateScore({ description: 'Score it', createPrompt: () => 'Score it.' });
}

async function record(scorer, step, pick) {
  try {
    const result = await scorer.run({ input: 'q', output: 'a' });
    const executions = result.judge[step].executions;
    return { accepted: true, value: pick(result), attemptCount: executions.at(-1).attemptCount };
  } catch (error) {
    const executions = error.result?.judge?.[step]?.executions ?? [];
    return {
      accepted: false,
      attemptCount: executions.at(-1)?.attemptCount ?? null,
      finishReason: executions.at(-1)?.finishReason ?? null,
    };
  }
}

const out = { analyze: {}, generateScore: {} };
for (const [name, answer] of Object.entries(ANALYZE_CASES)) {
  out.analyze[name] = await record(analyzeScorer(answer), 'analyze', (r) => r.analyzeStepResult);
}
for (const [name, answer] of Object.entries(SCORE_CASES)) {
  out.generateScore[name] = await record(scoreScorer(answer), 'generateScore', (r) => r.score);
}
out.cases = { analyze: ANALYZE_CASES, generateScore: SCORE_CASES };
console.log(JSON.stringify(stable(out), null, 2));
