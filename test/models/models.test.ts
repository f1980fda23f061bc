import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinModels, modelId } from '../../shared/models/model-catalog.ts';
import { startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const builtin = {
  LLM: { id: modelId('builtin', 'LLM', builtinModels.llm), type: 'LLM', provider: 'builtin', name: builtinModels.llm, isDefault: true, acceptsImages: true, source: 'deployment' },
  STT: { id: modelId('builtin', 'STT', builtinModels.stt), type: 'STT', provider: 'builtin', name: builtinModels.stt, isDefault: false, acceptsImages: false, source: 'deployment' },
  TTS: { id: modelId('builtin', 'TTS', builtinModels.tts), type: 'TTS', provider: 'builtin', name: builtinModels.tts, isDefault: false, acceptsImages: false, source: 'deployment' },
} as const;

describe('listModels', () => {
  it('lists the built-in LLM, STT and TTS models under their stable ids', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', '/v1/chat/models?limit=100', { key });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual(expect.arrayContaining([builtin.LLM, builtin.STT, builtin.TTS]));
    expect(response.body.pagination).toMatchObject({ page: 1, limit: 100, total: response.body.data.length });
    expect(response.body.data.filter((model: any) => model.isDefault)).toEqual([builtin.LLM]);
  });

  it.each(['LLM', 'STT', 'TTS'] as const)('filters by type=%s', async (type) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', `/v1/chat/models?type=${type}&limit=100`, { key });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body.data).toContainEqual(builtin[type]);
    expect(response.body.data.every((model: any) => model.type === type)).toBe(true);
  });

  it('rejects an unknown type', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', '/v1/chat/models?type=VISION', { key });

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'VALIDATION_ERROR', status: 400 });
    expect(response.body.error.details.map((detail: any) => detail.field)).toContain('type');
  });
});
