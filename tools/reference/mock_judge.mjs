// A judge model for the reference system that answers from a script: the same bytes the Python
// tests give scorewatch's ScriptedJudge. Our own code, written against the AI SDK v2 model shape.
export function scriptedModel(answers, { finishReason = 'stop' } = {}) {
  let next = 0;
  const usage = { inputTokens: 10, outputTokens: 20, totalTokens: 30 };
  const take = () => {
    if (next >= answers.length) throw new Error(`scripted model ran out of answers at ${next}`);
    return answers[next++];
  };
  const reasonOf = (answer) => (typeof answer === 'object' ? answer.finishReason : finishReason);
  const textOf = (answer) => (typeof answer === 'object' ? answer.text : answer);
  return {
    specificationVersion: 'v2',
    provider: 'scripted',
    modelId: 'scripted-judge',
    supportedUrls: {},
    get calls() {
      return next;
    },
    async doGenerate() {
      const answer = take();
      return {
        content: [{ type: 'text', text: textOf(answer) }],
        finishReason: reasonOf(answer),
        usage,
        warnings: [],
      };
    },
    async doStream() {
      const answer = take();
      return {
        stream: new ReadableStream({
          start(controller) {
            controller.enqueue({ type: 'stream-start', warnings: [] });
            controller.enqueue({ type: 'text-start', id: '1' });
            controller.enqueue({ type: 'text-delta', id: '1', delta: textOf(answer) });
            controller.enqueue({ type: 'text-end', id: '1' });
            controller.enqueue({ type: 'finish', finishReason: reasonOf(answer), usage });
            controller.close();
          },
        }),
      };
    },
  };
}

// The texts of the prompts a scripted model is sent, call by call (a recording keeps facts about
// them, never the reference's prompts themselves).
export function watchPrompts(model) {
  const prompts = [];
  for (const method of ['doGenerate', 'doStream']) {
    const original = model[method].bind(model);
    model[method] = async (options) => {
      const texts = options.prompt.flatMap((message) =>
        typeof message.content === 'string'
          ? [message.content]
          : message.content.filter((part) => part.type === 'text').map((part) => part.text),
      );
      prompts.push(texts.join('\n'));
      return original(options);
    };
  }
  return prompts;
}

// Which of `probes` (strings) any of `prompts` contains.
export function probed(probes, prompts) {
  return Object.fromEntries(probes.map((probe) => [probe, prompts.some((text) => text.includes(probe))]));
}

export const REF = process.env.MASTRA_REF ?? '/work/ref/node_modules';

// Fields that differ run to run (ids, timings) are left out of the recorded shape.
export function stable(value) {
  return JSON.parse(
    JSON.stringify(value, (key, v) => (key === 'runId' || key === 'durationMs' ? undefined : v)),
  );
}
