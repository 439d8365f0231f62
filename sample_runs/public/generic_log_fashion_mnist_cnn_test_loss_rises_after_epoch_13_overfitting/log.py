log = '''
2025-05-09 19:17:05,018 - Epoch [1/20] | Train Loss: 0.4571 Acc: 0.8349 | Test Loss: 0.3226 Acc: 0.8797
2025-05-09 19:17:26,469 - Epoch [2/20] | Train Loss: 0.3098 Acc: 0.8865 | Test Loss: 0.2981 Acc: 0.8907
2025-05-09 19:17:49,153 - Epoch [3/20] | Train Loss: 0.2692 Acc: 0.9019 | Test Loss: 0.2680 Acc: 0.9011
2025-05-09 19:33:52,695 - Epoch [1/20] | Train Loss: 0.4571 Acc: 0.8349 | Test Loss: 0.3226 Acc: 0.8797
2025-05-09 19:34:16,384 - Epoch [2/20] | Train Loss: 0.3098 Acc: 0.8865 | Test Loss: 0.2981 Acc: 0.8907
2025-05-09 19:34:43,563 - Epoch [3/20] | Train Loss: 0.2692 Acc: 0.9019 | Test Loss: 0.2680 Acc: 0.9011
2025-05-09 19:35:08,127 - Epoch [4/20] | Train Loss: 0.2408 Acc: 0.9108 | Test Loss: 0.2396 Acc: 0.9083
2025-05-09 19:35:31,898 - Epoch [5/20] | Train Loss: 0.2190 Acc: 0.9196 | Test Loss: 0.2311 Acc: 0.9161
2025-05-09 19:35:55,483 - Epoch [6/20] | Train Loss: 0.1996 Acc: 0.9259 | Test Loss: 0.2424 Acc: 0.9136
2025-05-09 19:36:18,515 - Epoch [7/20] | Train Loss: 0.1847 Acc: 0.9314 | Test Loss: 0.2221 Acc: 0.9232
2025-05-09 19:36:43,850 - Epoch [8/20] | Train Loss: 0.1682 Acc: 0.9369 | Test Loss: 0.2097 Acc: 0.9252
2025-05-09 19:37:09,009 - Epoch [9/20] | Train Loss: 0.1558 Acc: 0.9409 | Test Loss: 0.2146 Acc: 0.9255
2025-05-09 19:37:32,703 - Epoch [10/20] | Train Loss: 0.1449 Acc: 0.9456 | Test Loss: 0.2167 Acc: 0.9258
2025-05-09 19:37:55,856 - Epoch [11/20] | Train Loss: 0.1350 Acc: 0.9489 | Test Loss: 0.2146 Acc: 0.9299
2025-05-09 19:38:19,262 - Epoch [12/20] | Train Loss: 0.1244 Acc: 0.9523 | Test Loss: 0.2325 Acc: 0.9248
2025-05-09 19:38:42,816 - Epoch [13/20] | Train Loss: 0.1142 Acc: 0.9567 | Test Loss: 0.2081 Acc: 0.9300
2025-05-09 19:39:06,738 - Epoch [14/20] | Train Loss: 0.1047 Acc: 0.9601 | Test Loss: 0.2497 Acc: 0.9257
2025-05-09 19:39:32,013 - Epoch [15/20] | Train Loss: 0.0998 Acc: 0.9621 | Test Loss: 0.2407 Acc: 0.9243
2025-05-09 19:39:55,826 - Epoch [16/20] | Train Loss: 0.0905 Acc: 0.9657 | Test Loss: 0.2539 Acc: 0.9257
2025-05-09 19:40:18,087 - Epoch [17/20] | Train Loss: 0.0822 Acc: 0.9697 | Test Loss: 0.2554 Acc: 0.9266
2025-05-09 19:40:42,247 - Epoch [18/20] | Train Loss: 0.0772 Acc: 0.9705 | Test Loss: 0.2728 Acc: 0.9289
2025-05-09 19:41:05,408 - Epoch [19/20] | Train Loss: 0.0750 Acc: 0.9709 | Test Loss: 0.2600 Acc: 0.9271
2025-05-09 19:41:28,413 - Epoch [20/20] | Train Loss: 0.0685 Acc: 0.9740 | Test Loss: 0.2823 Acc: 0.9264

'''